// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a peer is: a host and a port, and the one reader of "HOST:PORT"
// text. The programs' --connect and --listen (parse_endpoint), their
// --metrics address and the elements' rdma:// URIs all take their text
// apart with split_host_port() and port_number(); each says in its own
// words what is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmastream {

inline constexpr std::uint16_t kDefaultPort = 18515;

struct Endpoint {
    std::string host; // empty on a listener: every address
    std::uint16_t port = kDefaultPort;
};
// "HOST", "HOST:PORT", ":PORT", "[v6]:PORT", "[v6]", a bare v6 address
// (the default port), "" (listen side). Throws UserError.
Endpoint parse_endpoint(const std::string& text);

// "HOST:PORT" taken apart, nothing checked but the brackets: "HOST" (no
// port), "HOST:PORT" and ":PORT" (the host may be empty, the port's text
// anything), "[V6]" and "[V6]:PORT" (the host without its brackets). Text
// with more than one ':' and no brackets is all host: a bare IPv6 address,
// which a caller may refuse. The views point into `text`.
struct HostPort {
    enum class Fault {
        kNone,
        kUnclosedBracket, // "[" without "]"
        kAfterBracket,    // "]" followed by something other than ":PORT"
    };
    std::string_view host;
    std::optional<std::string_view> port; // the text after the ':'
    bool bracketed = false;
    Fault fault = Fault::kNone;

    bool bare_ipv6() const noexcept { return !bracketed && host.find(':') != std::string_view::npos; }
};
HostPort split_host_port(std::string_view text) noexcept;

// A port's text as a number: digits only, 0..65535 (a caller that takes no
// 0 refuses it); nullopt for anything else ("", "http", "-1", "65536").
std::optional<std::uint16_t> port_number(std::string_view text) noexcept;

} // namespace rdmastream
