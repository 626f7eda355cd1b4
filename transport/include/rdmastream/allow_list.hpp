// SPDX-License-Identifier: LGPL-2.1-or-later
// Who may connect to a listener: a list of addresses and prefixes
// (`--allow ADDR[/PREFIX]`, the elements' `allow` property). Empty: everyone.
//
// IPv4 and IPv6 are compared in one space: an IPv4 address is its IPv6
// mapped form ::ffff:a.b.c.d (RoCE v2 names IPv4 peers that way too, and a
// listener on "::" sees IPv4 peers that way), so "198.18.0.0/24" also
// matches a peer the kernel reports as ::ffff:198.18.0.7.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct sockaddr;

namespace rdmastream {

class AllowList {
public:
    // Adds every entry of `text`: "ADDR[/PREFIX]", several separated by
    // commas (spaces around them are ignored). Throws UserError naming the
    // entry that is not an address, or a prefix too long for its family.
    void add(std::string_view text);
    // No entry: everyone may connect.
    bool empty() const noexcept { return rules_.empty(); }
    // Whether a peer at `peer` (AF_INET or AF_INET6) may connect; another
    // family only when the list is empty.
    bool allows(const sockaddr* peer) const noexcept;
    // "198.18.0.0/24, fd00::/8", for messages; "everyone" when empty.
    std::string describe() const;

private:
    struct Rule {
        std::array<std::uint8_t, 16> addr{}; // IPv6, IPv4 mapped
        unsigned prefix = 128;               // bits of addr that must match
        std::string text;                    // as given, for describe()
    };
    std::vector<Rule> rules_;
};

// "198.18.0.2", "fd00::1", for messages; "?" for another family.
std::string address_text(const sockaddr* sa);

} // namespace rdmastream
