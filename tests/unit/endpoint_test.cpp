// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/error.hpp"
#include "rdmastream/rc_connection.hpp"

#include <gtest/gtest.h>

using rdmastream::parse_endpoint;
using rdmastream::UserError;

TEST(ParseEndpoint, HostAndPort) {
    auto ep = parse_endpoint("198.18.0.1:7000");
    EXPECT_EQ(ep.host, "198.18.0.1");
    EXPECT_EQ(ep.port, 7000);
    ep = parse_endpoint("receiver.local");
    EXPECT_EQ(ep.host, "receiver.local");
    EXPECT_EQ(ep.port, rdmastream::kDefaultPort);
    ep = parse_endpoint(":7001");
    EXPECT_EQ(ep.host, "");
    EXPECT_EQ(ep.port, 7001);
    ep = parse_endpoint("");
    EXPECT_EQ(ep.host, "");
    EXPECT_EQ(ep.port, rdmastream::kDefaultPort);
}

TEST(ParseEndpoint, Ipv6) {
    auto ep = parse_endpoint("[fe80::1]:7000");
    EXPECT_EQ(ep.host, "fe80::1");
    EXPECT_EQ(ep.port, 7000);
    ep = parse_endpoint("fe80::1"); // bare v6, default port
    EXPECT_EQ(ep.host, "fe80::1");
    EXPECT_EQ(ep.port, rdmastream::kDefaultPort);
}

TEST(ParseEndpoint, RefusesBadPorts) {
    EXPECT_THROW(parse_endpoint("h:0"), UserError);
    EXPECT_THROW(parse_endpoint("h:65536"), UserError);
    EXPECT_THROW(parse_endpoint("h:12x"), UserError);
    EXPECT_THROW(parse_endpoint("h:"), UserError);
    EXPECT_THROW(parse_endpoint("[::1"), UserError);
}
