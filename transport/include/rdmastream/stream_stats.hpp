// Per-stream counters, cheap to update on the hot path (plain integers, one
// clock read per frame) and exported as JSON by the programs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace rdmastream {

// The wall clock in ns since the epoch (CLOCK_REALTIME through the vDSO: no
// syscall). Only for one-way latency between synchronised machines.
inline std::uint64_t wall_clock_ns() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}

struct StreamStats {
    std::uint64_t frames = 0;
    std::uint64_t bytes = 0;
    std::uint64_t credit_waits = 0; // sender: frames that had to wait for a free slot
    std::uint64_t drops = 0;        // live policy: frames dropped instead of waiting
    std::uint64_t copies = 0;       // frames that needed a CPU copy (0 on the RDMA path)
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    // Sender: from posting a frame's write to learning it was delivered.
    // Receiver: one way, from the sender posting the frame to its arrival,
    // by the two wall clocks (only as good as their synchronisation; frames
    // that seem to arrive before they were sent are left out).
    std::uint64_t latency_samples = 0;
    std::chrono::nanoseconds latency_sum{0};
    std::chrono::nanoseconds latency_max{0};

    void add_latency(std::chrono::nanoseconds d) noexcept {
        ++latency_samples;
        latency_sum += d;
        latency_max = std::max(latency_max, d);
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

} // namespace rdmastream
