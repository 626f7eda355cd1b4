// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/allow_list.hpp"

#include "rdmastream/error.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <cstring>

using rdmastream::AllowList;
using rdmastream::UserError;

namespace {

sockaddr_storage addr(const char* text) {
    sockaddr_storage ss{};
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
    } else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
    } else {
        ADD_FAILURE() << "bad test address " << text;
    }
    return ss;
}

bool allows(const AllowList& l, const char* peer) {
    const sockaddr_storage ss = addr(peer);
    return l.allows(reinterpret_cast<const sockaddr*>(&ss));
}

} // namespace

TEST(AllowList, EmptyAllowsEveryone) {
    AllowList l;
    EXPECT_TRUE(l.empty());
    EXPECT_TRUE(allows(l, "198.18.0.2"));
    EXPECT_TRUE(allows(l, "fd00::1"));
    EXPECT_EQ(l.describe(), "everyone");
}

TEST(AllowList, Ipv4PrefixesAndSingleAddresses) {
    AllowList l;
    l.add("198.18.0.0/24");
    l.add("10.1.2.3");
    EXPECT_TRUE(allows(l, "198.18.0.1"));
    EXPECT_TRUE(allows(l, "198.18.0.255"));
    EXPECT_FALSE(allows(l, "198.18.1.1"));
    EXPECT_TRUE(allows(l, "10.1.2.3"));
    EXPECT_FALSE(allows(l, "10.1.2.4"));
    EXPECT_FALSE(allows(l, "fd00::1"));
    EXPECT_EQ(l.describe(), "198.18.0.0/24, 10.1.2.3");
}

TEST(AllowList, OddPrefixLengthsCompareBits) {
    AllowList l;
    l.add("192.168.0.0/23");
    EXPECT_TRUE(allows(l, "192.168.1.200"));
    EXPECT_FALSE(allows(l, "192.168.2.1"));
    AllowList none;
    none.add("0.0.0.0/0"); // every IPv4 peer, no IPv6 one
    EXPECT_TRUE(allows(none, "203.0.113.9"));
    EXPECT_FALSE(allows(none, "2001:db8::1"));
}

TEST(AllowList, CommaSeparatedWithSpaces) {
    AllowList l;
    l.add("198.18.0.1 , fd00::/8,2001:db8::5/128");
    EXPECT_TRUE(allows(l, "198.18.0.1"));
    EXPECT_TRUE(allows(l, "fd12:3456::9"));
    EXPECT_TRUE(allows(l, "2001:db8::5"));
    EXPECT_FALSE(allows(l, "2001:db8::6"));
}

TEST(AllowList, Ipv4RulesMatchMappedPeers) {
    AllowList l;
    l.add("198.18.0.0/16");
    EXPECT_TRUE(allows(l, "::ffff:198.18.3.4"));
    EXPECT_FALSE(allows(l, "::ffff:198.19.3.4"));
    AllowList v6;
    v6.add("::ffff:198.18.0.0/112"); // the mapped form, written as IPv6
    EXPECT_TRUE(allows(v6, "198.18.200.1"));
}

TEST(AllowList, RefusesWhatIsNotAnAddressOrPrefix) {
    AllowList l;
    EXPECT_THROW(l.add("receiver.example"), UserError);
    EXPECT_THROW(l.add("198.18.0.0/33"), UserError);
    EXPECT_THROW(l.add("fd00::/129"), UserError);
    EXPECT_THROW(l.add("198.18.0.0/"), UserError);
    EXPECT_THROW(l.add("198.18.0.0/8x"), UserError);
    EXPECT_THROW(l.add("198.18.0.1,,10.0.0.1"), UserError);
    EXPECT_THROW(l.add("198.18.0.300"), UserError);
    try {
        l.add("10.0.0.0/40");
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("0..32"), std::string::npos) << e.what();
    }
}

TEST(AllowList, OtherFamiliesOnlyWhenEmpty) {
    sockaddr other{};
    other.sa_family = AF_UNIX;
    AllowList l;
    EXPECT_TRUE(l.allows(&other));
    l.add("198.18.0.1");
    EXPECT_FALSE(l.allows(&other));
}
