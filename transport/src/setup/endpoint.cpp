// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/endpoint.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <charconv>

namespace rdmastream {

HostPort split_host_port(std::string_view text) noexcept {
    HostPort hp;
    if (!text.empty() && text.front() == '[') { // [v6], [v6]:port
        hp.bracketed = true;
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) {
            hp.fault = HostPort::Fault::kUnclosedBracket;
            return hp;
        }
        hp.host = text.substr(1, close - 1);
        const std::string_view after = text.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                hp.fault = HostPort::Fault::kAfterBracket;
                return hp;
            }
            hp.port = after.substr(1);
        }
    } else if (const std::size_t colon = text.rfind(':');
               colon != std::string_view::npos && text.find(':') == colon) { // one colon: host:port
        hp.host = text.substr(0, colon);
        hp.port = text.substr(colon + 1);
    } else {
        hp.host = text; // no colon, or a bare v6 address
    }
    return hp;
}

std::optional<std::uint16_t> port_number(std::string_view text) noexcept {
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value > 65535) {
        return std::nullopt;
    }
    return static_cast<std::uint16_t>(value);
}

Endpoint parse_endpoint(const std::string& text) {
    const HostPort hp = split_host_port(text);
    switch (hp.fault) {
    case HostPort::Fault::kNone: break;
    case HostPort::Fault::kUnclosedBracket: throw UserError(fmt::format("bad address '{}': missing ']'", text));
    case HostPort::Fault::kAfterBracket:
        throw UserError(fmt::format("bad address '{}': after ']' comes ':PORT' or nothing", text));
    }
    Endpoint ep{std::string(hp.host)};
    if (hp.port) {
        const std::optional<std::uint16_t> port = port_number(*hp.port);
        if (!port || *port == 0) {
            throw UserError(fmt::format("bad port '{}' in '{}': use 1..65535", *hp.port, text));
        }
        ep.port = *port;
    }
    return ep;
}

} // namespace rdmastream
