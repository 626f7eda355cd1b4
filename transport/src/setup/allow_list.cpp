// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/allow_list.hpp"

#include "rdmastream/error.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace rdmastream {

namespace {

using Bytes = std::array<std::uint8_t, 16>;

Bytes mapped(const in_addr& v4) {
    Bytes b{};
    b[10] = 0xff;
    b[11] = 0xff;
    std::memcpy(b.data() + 12, &v4, 4);
    return b;
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

bool prefix_matches(const Bytes& a, const Bytes& b, unsigned prefix) noexcept {
    const unsigned whole = prefix / 8, rest = prefix % 8;
    if (std::memcmp(a.data(), b.data(), whole) != 0) return false;
    if (rest == 0) return true;
    const auto mask = static_cast<std::uint8_t>(0xff00u >> rest);
    return (a[whole] & mask) == (b[whole] & mask);
}

} // namespace

void AllowList::add(std::string_view text) {
    while (!text.empty()) {
        const auto comma = text.find(',');
        const std::string_view entry = trimmed(text.substr(0, comma));
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        if (entry.empty()) {
            throw UserError("--allow: an empty entry: give ADDR or ADDR/PREFIX, separated by commas");
        }
        const auto slash = entry.find('/');
        const std::string host(entry.substr(0, slash));
        Rule r;
        r.text = entry;
        unsigned max_prefix = 128;
        in_addr v4{};
        in6_addr v6{};
        if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
            r.addr = mapped(v4);
            max_prefix = 32;
        } else if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
            std::memcpy(r.addr.data(), &v6, 16);
        } else {
            throw UserError(fmt::format("--allow {}: '{}' is not an IPv4 or IPv6 address (names are not looked up: "
                                        "give the address)",
                                        entry, host));
        }
        unsigned prefix = max_prefix;
        if (slash != std::string_view::npos) {
            const std::string_view p = entry.substr(slash + 1);
            const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), prefix);
            if (p.empty() || ec != std::errc{} || end != p.data() + p.size() || prefix > max_prefix) {
                throw UserError(fmt::format("--allow {}: the prefix must be 0..{} bits", entry, max_prefix));
            }
        }
        r.prefix = prefix + (max_prefix == 32 ? 96 : 0); // in the mapped space
        rules_.push_back(std::move(r));
    }
}

bool AllowList::allows(const sockaddr* peer) const noexcept {
    if (rules_.empty()) return true;
    Bytes a{};
    if (peer->sa_family == AF_INET) {
        a = mapped(reinterpret_cast<const sockaddr_in*>(peer)->sin_addr);
    } else if (peer->sa_family == AF_INET6) {
        std::memcpy(a.data(), &reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr, 16);
    } else {
        return false;
    }
    for (const Rule& r : rules_) {
        if (prefix_matches(a, r.addr, r.prefix)) return true;
    }
    return false;
}

std::string AllowList::describe() const {
    if (rules_.empty()) return "everyone";
    std::string s;
    for (const Rule& r : rules_) s += (s.empty() ? "" : ", ") + r.text;
    return s;
}

std::string address_text(const sockaddr* sa) {
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, host, sizeof host);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, host, sizeof host);
    }
    return host;
}

} // namespace rdmastream
