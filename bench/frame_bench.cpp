// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmastream-bench: stream throughput and per-frame round trip of the
// transport, for comparison with perftest on the same device (bench/run.sh).
//
// The receiver releases each frame as soon as it arrives (no checking: that
// is rdma-ring-check's job); the sender writes the same registered buffer
// again and again. --pingpong keeps one frame in flight and reports the round
// trip (the write, then its credit back), comparable to ib_write_lat's figure
// (half of a ping-pong of two writes, so one write's worth of work).
// The receiver prints its own line: its CPU time (user + system, rxe's
// work in its thread included) per frame, with or without memory windows
// (--no-memory-windows), for bench/mw-cost.sh.
#include "rdmastream/error.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace rs = rdmastream;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
    std::string role, addr;
    std::uint16_t port = rs::kDefaultPort;
    std::uint32_t size = 1 << 20, slots = 8;
    std::uint64_t frames = 1000;
    bool pingpong = false;
    bool memory_windows = false;
    CLI::App app{"rdmastream-bench: transport throughput / round trip at one frame size"};
    app.add_option("--role", role, "receiver (listens) or sender")->required()->check(CLI::IsMember({"receiver", "sender"}));
    app.add_option("--addr", addr, "listen address (receiver) or receiver address (sender)")->required();
    app.add_option("--port", port)->capture_default_str();
    app.add_option("--size", size, "payload bytes per frame")->capture_default_str();
    app.add_option("--slots", slots, "ring slots (receiver)")->capture_default_str();
    app.add_option("--frames", frames, "frames to send")->capture_default_str();
    app.add_flag("--memory-windows,!--no-memory-windows", memory_windows,
                 "receiver: a memory window per slot (default: the ring as one region)");
    app.add_flag("--pingpong", pingpong, "sender: one frame in flight, report round trips");
    CLI11_PARSE(app, argc, argv);
    using namespace std::chrono_literals;
    try {
        if (role == "receiver") {
            rs::Listener listener(rs::Endpoint{addr, port});
            rs::RingConfig ring;
            ring.slots = slots;
            ring.slot_size = size + 64;
            ring.memory_windows = memory_windows;
            auto rx = rs::FrameReceiver::accept(listener, ring, 60s);
            const auto cpu_us = [] {
                rusage u{};
                getrusage(RUSAGE_SELF, &u);
                return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
                       static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
            };
            double cpu0 = 0;
            std::uint64_t n = 0;
            while (auto f = rx->next(30s)) {
                if (n++ == 0) cpu0 = cpu_us(); // from the first frame: set-up (pinning) excluded
                rx->release(f->slot);
            }
            const nlohmann::json j = {{"role", "receiver"},
                                      {"size", size},
                                      {"memory_windows", rx->memory_windows()},
                                      {"frames", n},
                                      {"cpu_us_per_frame", n > 1 ? (cpu_us() - cpu0) / static_cast<double>(n - 1) : 0}};
            std::printf("%s\n", j.dump().c_str());
            return 0;
        }
        auto tx = rs::FrameSender::connect(rs::Endpoint{addr, port}, rs::SenderOptions{}, 60s);
        rs::RegisteredRegion buf(tx->pd(), size, 0);
        std::vector<double> rtt_us;
        const auto start = Clock::now();
        for (std::uint64_t i = 0; i < frames; ++i) {
            const auto t0 = Clock::now();
            const std::uint64_t seq = tx->send(buf.bytes(), buf.lkey(), {}, i, 30s).value(); // no waker: never interrupted
            if (pingpong) {
                tx->wait_done(seq, 30s); // done = the receiver released it (credit back)
                rtt_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            }
        }
        tx->finish(30s);
        const double secs = std::chrono::duration<double>(Clock::now() - start).count();
        nlohmann::json j = {{"size", size},
                            {"frames", frames},
                            {"seconds", secs},
                            {"gbps", static_cast<double>(size) * static_cast<double>(frames) * 8 / secs / 1e9},
                            {"fps", static_cast<double>(frames) / secs},
                            {"credit_waits", tx->stats().credit_waits},
                            {"latency_mean_us", tx->stats().latency_mean_us()}};
        if (pingpong && !rtt_us.empty()) {
            std::sort(rtt_us.begin(), rtt_us.end());
            j["rtt_us_median"] = rtt_us[rtt_us.size() / 2];
            j["rtt_us_p99"] = rtt_us[rtt_us.size() * 99 / 100];
        }
        std::printf("%s\n", j.dump().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdmastream-bench %s: %s\n", role.c_str(), e.what());
        return 1;
    }
}
