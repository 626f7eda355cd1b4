// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-stream counters, cheap to update on the hot path (plain integers, one
// clock read per frame) and exported as JSON by the programs.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rdmastream {

// The wall clock in ns since the epoch (CLOCK_REALTIME through the vDSO: no
// syscall). Only for one-way latency between synchronised machines.
inline std::uint64_t wall_clock_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

// Latency samples by bucket, for a histogram (the programs' --metrics):
// bucket i counts samples of at most kUpperNs[i], the last one those above
// every bound (Prometheus' "+Inf"). Not cumulative. From 10 us (a hardware
// NIC's round trip) to 1 s (a stalled peer), 2.5x apart.
struct LatencyHistogram {
    static constexpr std::array<std::int64_t, 16> kUpperNs = {
        10'000,     25'000,     50'000,      100'000,     250'000,     500'000,       1'000'000,  2'500'000,
        5'000'000,  10'000'000, 25'000'000,  50'000'000,  100'000'000, 250'000'000,   500'000'000, 1'000'000'000};
    std::array<std::uint64_t, kUpperNs.size() + 1> counts{};

    // At most 16 comparisons, no branch on the data but the loop's.
    void add(std::chrono::nanoseconds d) noexcept {
        std::size_t i = 0;
        while (i < kUpperNs.size() && d.count() > kUpperNs[i]) ++i;
        ++counts[i];
    }
    LatencyHistogram& operator+=(const LatencyHistogram& o) noexcept {
        for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += o.counts[i];
        return *this;
    }
};

struct StreamStats {
    std::uint64_t frames = 0;
    std::uint64_t bytes = 0;
    std::uint64_t credit_waits = 0; // sender: frames that had to wait for a free slot
    std::uint64_t drops = 0;        // live policy: frames dropped instead of waiting
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    // Sender: from posting a frame's write to learning it was delivered.
    // Receiver: one way, from the sender posting the frame to its arrival,
    // by the two wall clocks (only as good as their synchronisation; frames
    // that seem to arrive before they were sent are left out).
    std::uint64_t latency_samples = 0;
    std::chrono::nanoseconds latency_sum{0};
    std::chrono::nanoseconds latency_max{0};
    LatencyHistogram latency_buckets; // the same samples by bucket
    // Receiver: the longest time between the arrivals of two frames handed
    // out one after the other (a stall the consumer saw); 0 before two.
    std::chrono::nanoseconds max_gap{0};

    void add_latency(std::chrono::nanoseconds d) noexcept {
        ++latency_samples;
        latency_sum += d;
        latency_max = std::max(latency_max, d);
        latency_buckets.add(d);
    }
    double latency_mean_us() const {
        return latency_samples ? static_cast<double>(latency_sum.count()) / 1e3 / static_cast<double>(latency_samples)
                               : 0.0;
    }
    double latency_max_us() const { return static_cast<double>(latency_max.count()) / 1e3; }

    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    double fps() const { return static_cast<double>(frames) / seconds(); }
    double gbps() const { return static_cast<double>(bytes) * 8 / seconds() / 1e9; }
};

// One path of a stream opened over two (Sender::open and Receiver::open
// with two Doors), counted in the manner of SMPTE ST 2022-7's statistics:
// each path's own view before the two are merged.
struct PathReport {
    char name = 'A';    // 'A': the first Door's path; 'B': the second's
    std::string peer;   // the peer's address on it (now, or when it was lost)
    std::string device; // the RDMA device it runs on ("rxe1"); empty before it first connected
    bool up = false;
    // Receiver: frames handed out from this path's copy (it came first).
    // Sender: frames this path delivered.
    std::uint64_t frames_first = 0;
    // Receiver: of those, frames no copy of came on the other path.
    // Sender: frames only this path posted.
    std::uint64_t frames_only = 0;
    // Receiver: frames missing from this path's sequence (the other path's,
    // or lost on both). Sender: frames this path never delivered (skipped
    // because the other path had, or lost with it).
    std::uint64_t frames_lost = 0;
    // Receiver: second copies unlike the first (headers, or bytes while the
    // first was still held): each is a fault on a path, logged once.
    std::uint64_t copies_differ = 0;
    std::uint64_t downs = 0; // times it was lost
    std::uint64_t ups = 0;   // times it came back
};

} // namespace rdmastream
