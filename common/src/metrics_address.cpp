// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/metrics_address.hpp"

#include "rdmastream/endpoint.hpp"
#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <netdb.h>
#include <sys/socket.h>

#include <memory>
#include <optional>
#include <string_view>

namespace rdmastream::cli {

void add_metrics_flag(CLI::App& app, std::string& value, bool fanout) {
    app.add_option("--metrics", value,
                   fmt::format("serve Prometheus / OpenMetrics metrics over HTTP at http://ADDR:PORT/metrics while "
                               "streaming (frames, bytes, drops, gaps, copies, credit waits, a latency histogram, "
                               "format changes{}); ADDR defaults to {} (this machine only): give 0.0.0.0 or [::] to "
                               "be scraped from elsewhere. PORT 0: any free port (named at start-up)",
                               fanout ? "; a fan-out (--receivers): per receiver too, those that left included" : "",
                               kMetricsDefaultHost))
        ->type_name("[ADDR:]PORT");
}

namespace {

std::uint16_t parse_port(std::string_view port, const std::string& text) {
    const std::optional<std::uint16_t> value = port_number(port); // 0 included: any free port
    if (!value) {
        throw UserError(fmt::format("--metrics {}: bad port '{}': give 1..65535 (0: any free port), e.g. "
                                    "--metrics 9464 or --metrics 0.0.0.0:9464",
                                    text, port));
    }
    return *value;
}

} // namespace

MetricsAddress parse_metrics_address(const std::string& text) {
    MetricsAddress a;
    a.given = text;
    std::string_view port;
    if (text.find_first_not_of("0123456789") == std::string::npos) { // PORT alone
        a.host = kMetricsDefaultHost;
        port = text;
    } else {
        const HostPort hp = split_host_port(text);
        if (hp.bracketed && (hp.fault != HostPort::Fault::kNone || !hp.port)) {
            throw UserError(fmt::format("--metrics {}: write an IPv6 address as [ADDR]:PORT, e.g. [::1]:9464",
                                        text));
        }
        if (!hp.port || hp.bare_ipv6()) {
            throw UserError(fmt::format("--metrics {}: give PORT or ADDR:PORT (an IPv6 address in brackets: "
                                        "[ADDR]:PORT)",
                                        text));
        }
        a.host = hp.host;
        port = *hp.port;
    }
    if (a.host.empty()) {
        throw UserError(fmt::format("--metrics {}: the address before the port is empty: give only the port "
                                    "(this machine only, {}), or an address such as 0.0.0.0 (every IPv4 address)",
                                    text, kMetricsDefaultHost));
    }
    a.port = parse_port(port, text);
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(a.host.c_str(), nullptr, &hints, &found); rc != 0) {
        throw UserError(fmt::format("--metrics {}: cannot use address '{}': {}", text, a.host, gai_strerror(rc)));
    }
    freeaddrinfo(found);
    return a;
}

} // namespace rdmastream::cli
