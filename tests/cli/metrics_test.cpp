// SPDX-License-Identifier: LGPL-2.1-or-later
// --metrics without RDMA: the flag's parsing, the triple buffer between the
// threads, the text both formats render, and the HTTP endpoint itself
// (scraped with cpp-httplib's client; tests/cli/metrics.sh scrapes a real
// stream in the test bed and checks the text with prometheus_client).
#include "rdmastream_cli/metrics_address.hpp"
#include "rdmastream_cli/metrics_exporter.hpp"
#include "rdmastream_cli/metrics_text.hpp"
#include "rdmastream_cli/triple_buffer.hpp"

#include "rdmastream/error.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace cli = rdmastream::cli;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsAddress, PortAloneBindsLoopback) {
    const auto a = cli::parse_metrics_address("9464");
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 9464);
    EXPECT_EQ(cli::parse_metrics_address("0").port, 0); // any free port
}

TEST(MetricsAddress, AddressAndPort) {
    const auto v4 = cli::parse_metrics_address("0.0.0.0:9100");
    EXPECT_EQ(v4.host, "0.0.0.0");
    EXPECT_EQ(v4.port, 9100);
    const auto v6 = cli::parse_metrics_address("[::1]:9100");
    EXPECT_EQ(v6.host, "::1");
    EXPECT_EQ(v6.port, 9100);
    EXPECT_EQ(cli::parse_metrics_address("localhost:9100").host, "localhost");
}

TEST(MetricsAddress, BadValuesSayWhatIsWrong) {
    const auto message = [](const std::string& text) {
        try {
            cli::parse_metrics_address(text);
        } catch (const rdmastream::UserError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_THAT(message(""), HasSubstr("bad port ''"));
    EXPECT_THAT(message("65536"), HasSubstr("bad port '65536'"));
    EXPECT_THAT(message("127.0.0.1:http"), HasSubstr("bad port 'http'"));
    EXPECT_THAT(message("127.0.0.1:"), HasSubstr("bad port ''"));
    EXPECT_THAT(message(":9100"), HasSubstr("the address before the port is empty"));
    EXPECT_THAT(message("somehost"), HasSubstr("give PORT or ADDR:PORT"));
    EXPECT_THAT(message("::1:9100"), HasSubstr("give PORT or ADDR:PORT"));
    EXPECT_THAT(message("[::1]9100"), HasSubstr("[ADDR]:PORT"));
    EXPECT_THAT(message("no-such-host.invalid:9100"), HasSubstr("cannot use address 'no-such-host.invalid'"));
}

struct Pair {
    std::uint64_t a = 0, b = 0;
};

TEST(TripleBuffer, ReaderSeesTheNewestWholeValue) {
    cli::TripleBuffer<Pair> board;
    EXPECT_EQ(board.latest().a, 0u); // nothing published yet
    board.back() = {1, 1};
    board.publish();
    board.back() = {2, 2};
    board.publish();
    EXPECT_EQ(board.latest().a, 2u); // the newest; 1 was overwritten unread
    EXPECT_EQ(board.latest().a, 2u); // no new publish: the same value
}

TEST(TripleBuffer, NeverTornUnderConcurrency) {
    cli::TripleBuffer<Pair> board;
    std::atomic<bool> stop{false};
    constexpr std::uint64_t kWrites = 200000;
    std::thread writer([&] {
        for (std::uint64_t i = 1; i <= kWrites; ++i) {
            board.back() = {i, ~i}; // two stores a torn read would split
            board.publish();
        }
        stop = true;
    });
    std::uint64_t last = 0, looks = 0;
    bool whole = true, monotonic = true;
    while (!stop || last < kWrites) {
        const Pair p = board.latest();
        if (p.a != 0 && p.b != ~p.a) whole = false;
        if (p.a < last) monotonic = false;
        last = p.a;
        ++looks;
    }
    writer.join();
    EXPECT_TRUE(whole);
    EXPECT_TRUE(monotonic);
    EXPECT_EQ(last, kWrites);
    EXPECT_GT(looks, 0u);
}

namespace {

cli::MetricsSnapshot sample_snapshot() {
    cli::MetricsSnapshot s;
    s.stats.frames = 42;
    s.stats.bytes = 4200;
    s.stats.credit_waits = 3;
    s.stats.add_latency(std::chrono::microseconds(30));  // <= 50 us
    s.stats.add_latency(std::chrono::microseconds(700)); // <= 1 ms
    s.stats.add_latency(std::chrono::seconds(5));        // above every bound
    s.counters.gaps = 2;
    s.counters.copied = 1;
    s.counters.zero_copy = 41;
    s.counters.format_changes = 1;
    s.peers_connected = 1;
    return s;
}

const cli::MetricsIdentity kWho{"rdmarecv", "one way"};

} // namespace

TEST(MetricsText, PrometheusCountersAndHistogram) {
    const std::string t = cli::render_metrics(sample_snapshot(), kWho, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_frames_total counter\nrdmastream_frames_total 42\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_bytes_total 4200\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_gaps_total 2\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_copies_total 1\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_credit_waits_total 3\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_format_changes_total 1\n"));
    EXPECT_THAT(t, HasSubstr("\nrdmastream_peers_connected 1\n"));
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_build_info gauge\nrdmastream_build_info{program=\"rdmarecv\","));
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_latency_seconds histogram\n"));
    // Cumulative buckets, +Inf last, _count the samples, _sum in seconds.
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_bucket{le=\"2.5e-05\"} 0\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_bucket{le=\"5e-05\"} 1\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_bucket{le=\"0.001\"} 2\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_bucket{le=\"1\"} 2\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_bucket{le=\"+Inf\"} 3\nrdmastream_latency_seconds_count 3\n"
                             "rdmastream_latency_seconds_sum 5.00073\n"));
    EXPECT_THAT(t, Not(HasSubstr("# EOF")));
    EXPECT_THAT(t, Not(HasSubstr("rdmastream_receiver_"))); // not a fan-out
    EXPECT_THAT(t, Not(HasSubstr("rdmastream_path_")));     // one path
}

TEST(MetricsText, AProgrammesFlowsEachHaveTheirSeries) {
    cli::MetricsSnapshot s = sample_snapshot();
    s.counters.flows[0] = {"video", 40, 0};
    s.counters.flows[1] = {"audio", 75, 75};
    const std::string t = cli::render_metrics(s, kWho, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_flow_frames_total counter\n"
                             "rdmastream_flow_frames_total{flow=\"0\",kind=\"video\"} 40\n"
                             "rdmastream_flow_frames_total{flow=\"1\",kind=\"audio\"} 75\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_flow_copies_total{flow=\"1\",kind=\"audio\"} 75\n"));
    EXPECT_THAT(t, Not(HasSubstr("flow=\"2\""))); // no such flow
}

TEST(MetricsText, OpenMetricsNamesFamiliesAndEnds) {
    const std::string t = cli::render_metrics(sample_snapshot(), kWho, cli::MetricsFormat::kOpenMetrics);
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_frames counter\nrdmastream_frames_total 42\n"));
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_build info\nrdmastream_build_info{"));
    EXPECT_TRUE(t.ends_with("\n# EOF\n"));
    EXPECT_EQ(cli::metrics_format_for("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
              cli::MetricsFormat::kOpenMetrics);
    EXPECT_EQ(cli::metrics_format_for("*/*"), cli::MetricsFormat::kPrometheus);
}

TEST(MetricsText, FanoutSeriesPerReceiverIncludingThoseThatLeft) {
    cli::MetricsSnapshot s;
    std::vector<cli::PeerReport> peers(3);
    peers[0].peer = "198.18.0.2:4000";
    peers[0].policy = "lossless";
    peers[0].stats.frames = 10;
    peers[1].peer = "198.18.0.3:4001";
    peers[1].policy = "live";
    peers[1].stats.frames = 5;
    peers[1].left = true;
    peers[2] = peers[0]; // the same address again (left, dialled back from the same port): one series
    peers[2].stats.frames = 7;
    peers[2].left = true;
    peers[0].stats.add_latency(std::chrono::microseconds(20));
    cli::fill_snapshot(s, {}, {}, true, true, peers);
    EXPECT_EQ(s.peers_connected, 1u);           // the one that did not leave
    EXPECT_EQ(s.stats.latency_samples, 1u);     // the fan-out's latency: its receivers'
    const std::string t = cli::render_metrics(s, {"rdmasend", "x"}, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(t, HasSubstr("rdmastream_receiver_frames_total{peer=\"198.18.0.2:4000\"} 17\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_receiver_frames_total{peer=\"198.18.0.3:4001\"} 5\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_receiver_connected{peer=\"198.18.0.2:4000\",policy=\"lossless\"} 1\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_receiver_connected{peer=\"198.18.0.3:4001\",policy=\"live\"} 0\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_receiver_latency_seconds_bucket{peer=\"198.18.0.2:4000\",le=\"2.5e-05\"} 1\n"));
    EXPECT_THAT(t, HasSubstr("rdmastream_latency_seconds_count 1\n"));
}

namespace {

// Path A up on rxe0; path B on rxe1 lost, back and lost again, with a copy
// that differed.
std::vector<rdmastream::PathReport> two_paths() {
    return {{.name = 'A', .peer = "198.18.0.2:4000", .device = "rxe0", .up = true, .frames_first = 640,
             .frames_only = 80, .frames_lost = 2},
            {.name = 'B', .peer = "198.18.1.2:4001", .device = "rxe1", .up = false, .frames_first = 560,
             .frames_only = 3, .frames_lost = 82, .copies_differ = 1, .downs = 2, .ups = 1}};
}

} // namespace

TEST(MetricsText, TwoPathsEachHaveTheirSeriesByPathAndDevice) {
    cli::MetricsSnapshot s = sample_snapshot();
    s.paths.resize(5); // an older snapshot's entries: overwritten, the extra ones gone
    const std::vector<rdmastream::PathReport> paths = two_paths();
    cli::fill_snapshot(s, s.stats, s.counters, true, false, {}, paths);
    ASSERT_EQ(s.paths.size(), 2u);
    const std::string t = cli::render_metrics(s, kWho, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_path_up gauge\n"
                             "rdmastream_path_up{path=\"A\",device=\"rxe0\"} 1\n"
                             "rdmastream_path_up{path=\"B\",device=\"rxe1\"} 0\n"));
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_path_frames_first_total counter\n"
                             "rdmastream_path_frames_first_total{path=\"A\",device=\"rxe0\"} 640\n"
                             "rdmastream_path_frames_first_total{path=\"B\",device=\"rxe1\"} 560\n"));
    const std::tuple<const char*, int, int> others[] = {
        {"frames_only", 80, 3}, {"frames_lost", 2, 82}, {"copies_differ", 0, 1}, {"downs", 0, 2}, {"ups", 0, 1}};
    for (const auto& [series, a, b] : others) {
        const std::string name = std::string("rdmastream_path_") + series + "_total";
        EXPECT_THAT(t, HasSubstr("# TYPE " + name + " counter\n" + name + "{path=\"A\",device=\"rxe0\"} " +
                                 std::to_string(a) + "\n" + name + "{path=\"B\",device=\"rxe1\"} " +
                                 std::to_string(b) + "\n"));
    }
    EXPECT_THAT(t, HasSubstr("# HELP rdmastream_path_frames_first_total Frames handed out from this path's copy"));
    const std::string sent = cli::render_metrics(s, {"rdmasend", "x"}, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(sent, HasSubstr("# HELP rdmastream_path_frames_first_total Frames this path delivered\n"));
    // OpenMetrics: the counters' families without _total, the samples with.
    const std::string om = cli::render_metrics(s, kWho, cli::MetricsFormat::kOpenMetrics);
    EXPECT_THAT(om, HasSubstr("# TYPE rdmastream_path_downs counter\n"
                              "rdmastream_path_downs_total{path=\"A\",device=\"rxe0\"} 0\n"));
    EXPECT_TRUE(om.ends_with("\n# EOF\n"));
}

// A fan-out's receiver over two paths: its paths' series carry its peer
// too; one over one path has none; a receiver that left and came back
// from the same address counts as it is now (one series each).
TEST(MetricsText, AFanoutsTwoPathReceiverHasItsPathsSeriesByPeer) {
    cli::MetricsSnapshot s;
    std::vector<cli::PeerReport> peers(3);
    peers[0].peer = "198.18.0.2:4000";
    peers[0].policy = "lossless";
    peers[0].paths = two_paths();
    peers[0].paths[0].frames_first = 1; // its first stay: replaced by the one below
    peers[0].left = true;
    peers[1].peer = "198.18.0.3:4001";
    peers[1].policy = "live";
    peers[2] = peers[0];
    peers[2].paths = two_paths();
    peers[2].left = false;
    cli::fill_snapshot(s, {}, {}, true, true, peers);
    const std::string t = cli::render_metrics(s, {"rdmasend", "x"}, cli::MetricsFormat::kPrometheus);
    EXPECT_THAT(t, HasSubstr("# TYPE rdmastream_path_frames_first_total counter\n"
                             "rdmastream_path_frames_first_total{peer=\"198.18.0.2:4000\",path=\"A\",device=\"rxe0\"} 640\n"
                             "rdmastream_path_frames_first_total{peer=\"198.18.0.2:4000\",path=\"B\",device=\"rxe1\"} 560\n"
                             "# HELP"));
    EXPECT_THAT(t, Not(HasSubstr("198.18.0.3:4001\",path=")));
}

TEST(MetricsExporter, ServesWhatWasPublished) {
    cli::MetricsExporter exporter(cli::parse_metrics_address("0"), kWho);
    ASSERT_THAT(exporter.url(), HasSubstr("http://127.0.0.1:"));
    const int port = std::stoi(exporter.url().substr(exporter.url().rfind(':') + 1));
    httplib::Client client("127.0.0.1", port);
    auto before = client.Get("/metrics");
    ASSERT_TRUE(before);
    EXPECT_EQ(before->status, 200);
    EXPECT_EQ(before->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_THAT(before->body, HasSubstr("\nrdmastream_frames_total 0\n"));
    EXPECT_THAT(before->body, Not(HasSubstr("rdmastream_path_")));
    const cli::MetricsSnapshot s = sample_snapshot();
    exporter.set_paths(two_paths); // asked at each publish, on this (the stream's) thread
    exporter.publish(s.stats, s.counters, true);
    auto after = client.Get("/metrics", {{"Accept", "application/openmetrics-text; version=1.0.0"}});
    ASSERT_TRUE(after);
    EXPECT_EQ(after->get_header_value("Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
    EXPECT_THAT(after->body, HasSubstr("\nrdmastream_frames_total 42\n"));
    EXPECT_THAT(after->body, HasSubstr("\nrdmastream_path_frames_first_total{path=\"B\",device=\"rxe1\"} 560\n"));
    EXPECT_TRUE(after->body.ends_with("# EOF\n"));
    auto other = client.Get("/");
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 404);
}

TEST(MetricsExporter, RefusesAPortInUse) {
    cli::MetricsExporter first(cli::parse_metrics_address("0"), kWho);
    const std::string port = first.url().substr(first.url().rfind(':') + 1, std::string::npos);
    const std::string bare = port.substr(0, port.find('/'));
    try {
        cli::MetricsExporter second(cli::parse_metrics_address(bare), kWho);
        FAIL() << "a second exporter bound port " << bare;
    } catch (const rdmastream::UserError& e) {
        EXPECT_THAT(e.what(), HasSubstr("--metrics " + bare + ": cannot listen on 127.0.0.1:" + bare +
                                        ": the port is in use"));
    }
}

TEST(MetricsExporter, RefusesAnAddressNotOfThisMachine) {
    try {
        cli::MetricsExporter e(cli::parse_metrics_address("192.0.2.1:9464"), kWho); // TEST-NET-1
        FAIL() << "bound 192.0.2.1";
    } catch (const rdmastream::UserError& e) {
        EXPECT_THAT(e.what(), HasSubstr("192.0.2.1 is not an address of this machine"));
    }
}
