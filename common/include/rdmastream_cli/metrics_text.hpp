// SPDX-License-Identifier: LGPL-2.1-or-later
// A MetricsSnapshot as Prometheus' text exposition format (version 0.0.4)
// or as OpenMetrics 1.0.0 text, whichever the scraper's Accept header asks
// for. Pure functions: no I/O, no state.
#pragma once

#include "rdmastream_cli/metrics_snapshot.hpp"

#include <string>
#include <string_view>

namespace rdmastream::cli {

enum class MetricsFormat { kPrometheus, kOpenMetrics };

// What the program is, for the HELP lines and the build_info labels.
struct MetricsIdentity {
    std::string program;    // "rdmasend", "rdmarecv"
    std::string latency_is; // what its latency measures, e.g. "one way, from the sender's clock to ours"
};

// OpenMetrics when `accept` names application/openmetrics-text (as
// Prometheus' own scrapes do), Prometheus text otherwise.
MetricsFormat metrics_format_for(std::string_view accept);
const char* metrics_content_type(MetricsFormat f);

std::string render_metrics(const MetricsSnapshot& s, const MetricsIdentity& who, MetricsFormat f);

} // namespace rdmastream::cli
