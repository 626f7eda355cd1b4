// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/endpoint.hpp"
#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <string>

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

// The one reader of "HOST:PORT" (parse_endpoint, --metrics, rdma:// URIs).
TEST(SplitHostPort, TakesTheTextApart) {
    using rdmastream::HostPort;
    using rdmastream::split_host_port;
    HostPort hp = split_host_port("198.18.0.1:7000");
    EXPECT_EQ(hp.host, "198.18.0.1");
    EXPECT_EQ(hp.port, "7000");
    hp = split_host_port("receiver.local");
    EXPECT_EQ(hp.host, "receiver.local");
    EXPECT_FALSE(hp.port);
    hp = split_host_port(":7001");
    EXPECT_EQ(hp.host, "");
    EXPECT_EQ(hp.port, "7001");
    hp = split_host_port("[fe80::1]:7000");
    EXPECT_TRUE(hp.bracketed);
    EXPECT_EQ(hp.host, "fe80::1");
    EXPECT_EQ(hp.port, "7000");
    EXPECT_FALSE(hp.bare_ipv6());
    hp = split_host_port("[::1]");
    EXPECT_EQ(hp.host, "::1");
    EXPECT_FALSE(hp.port);
    hp = split_host_port("fe80::1:5000"); // no brackets: all host
    EXPECT_EQ(hp.host, "fe80::1:5000");
    EXPECT_FALSE(hp.port);
    EXPECT_TRUE(hp.bare_ipv6());
    EXPECT_EQ(split_host_port("[::1").fault, HostPort::Fault::kUnclosedBracket);
    EXPECT_EQ(split_host_port("[::1]9100").fault, HostPort::Fault::kAfterBracket);
    EXPECT_EQ(split_host_port("h:").port, "");
}

TEST(PortNumber, DigitsUpTo65535) {
    using rdmastream::port_number;
    EXPECT_EQ(port_number("18515"), 18515);
    EXPECT_EQ(port_number("0"), 0); // a caller that takes no 0 refuses it
    EXPECT_EQ(port_number("65535"), 65535);
    for (const char* bad : {"", "65536", "http", "-1", "+5", "12x", " 80", "99999999999"}) {
        EXPECT_FALSE(port_number(bad)) << bad;
    }
}

TEST(ParseEndpoint, MessagesSayWhatIsWrong) {
    const auto message = [](const std::string& text) {
        try {
            parse_endpoint(text);
        } catch (const UserError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(message("h:0"), "bad port '0' in 'h:0': use 1..65535");
    EXPECT_EQ(message("[::1"), "bad address '[::1': missing ']'");
    EXPECT_EQ(message("[::1]7000"), "bad address '[::1]7000': after ']' comes ':PORT' or nothing");
}
