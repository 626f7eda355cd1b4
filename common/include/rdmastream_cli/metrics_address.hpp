// SPDX-License-Identifier: LGPL-2.1-or-later
// --metrics [ADDR:]PORT, both programs' flag: where the metrics endpoint
// listens. Parsing only; metrics_exporter.hpp binds it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace rdmastream::cli {

struct MetricsAddress {
    std::string host; // an address or a name to bind; IPv6 without brackets
    std::uint16_t port = 0; // 0: any free port
    std::string given;      // the flag's text, for messages
};

// The loopback address a bare PORT binds: metrics stay on this machine
// unless an address says otherwise.
inline constexpr const char* kMetricsDefaultHost = "127.0.0.1";

// Adds --metrics; `fanout`: the help mentions the per-receiver series.
void add_metrics_flag(CLI::App& app, std::string& value, bool fanout);

// "PORT" (loopback), "ADDR:PORT", "[IPV6]:PORT"; PORT 0..65535 (0: any
// free one). Throws UserError naming what is wrong, and for an ADDR that
// does not resolve.
MetricsAddress parse_metrics_address(const std::string& text);

} // namespace rdmastream::cli
