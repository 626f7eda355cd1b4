// SPDX-License-Identifier: LGPL-2.1-or-later
// The software ceiling: how fast FrameSender and FrameReceiver go when the
// wire costs nothing. Both ends over the in-memory fabric, each on its own
// thread; the receiver releases every frame at once. Prints one JSON line
// per (size, poll mode): frames/s and CPU nanoseconds per frame per side,
// with the fabric's own payload copy (a NIC's DMA, here a memcpy on the
// sender's thread) reported apart and taken out of the sender's figure: it
// is calibrated by copying the same bytes alone, in thread CPU time, since
// timing each copy in place would cost more than a small frame does.
// Usage: rdmastream-ceiling [--quick]   (bench/, never a timed test)
#include "stream_pair.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace rdmastream;
using namespace std::chrono_literals;

std::uint64_t thread_cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

// CPU nanoseconds one memcpy of `size` bytes (+ the 64-byte header) takes here.
double copy_ns(std::size_t size) {
    std::vector<std::byte> from(size + wire::kSlotHeaderSize, std::byte{1}), to(from.size());
    const int reps = static_cast<int>(std::max<std::size_t>(20, (256u << 20) / from.size()));
    const std::uint64_t c0 = thread_cpu_ns();
    for (int i = 0; i < reps; ++i) {
        std::memcpy(to.data(), from.data(), from.size());
        asm volatile("" : : "r"(to.data()) : "memory"); // keep the copy
    }
    return static_cast<double>(thread_cpu_ns() - c0) / reps;
}

void run(std::size_t size, std::uint64_t frames, PollMode mode) {
    RingConfig ring;
    ring.slots = 16;
    ring.slot_size = static_cast<std::uint32_t>(size + wire::kSlotHeaderSize);
    ring.poll_mode = mode;
    SenderOptions opts;
    opts.poll_mode = mode;
    auto p = harness::connect_pair(ring, opts);
    RegisteredRegion payload = p.tx->register_memory(size, 0); // unchanged, so every frame may share it
    std::memset(payload.bytes().data(), 0x5a, size);

    std::uint64_t rx_cpu = 0, received = 0;
    std::thread rx([&] {
        const std::uint64_t c0 = thread_cpu_ns();
        while (auto f = p.rx->next(10s)) {
            p.rx->release(f->slot);
            ++received;
        }
        rx_cpu = thread_cpu_ns() - c0;
    });
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t c0 = thread_cpu_ns();
    for (std::uint64_t i = 0; i < frames; ++i) {
        p.tx->send(payload.bytes(), payload.lkey(), {}, i, 10s).value(); // no waker: never interrupted
    }
    p.tx->finish(10s);
    const std::uint64_t tx_cpu = thread_cpu_ns() - c0;
    rx.join();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double n = static_cast<double>(frames);
    const double copy = copy_ns(size);
    std::printf("%s\n",
                fmt::format("{{\"size\": {}, \"poll\": \"{}\", \"frames\": {}, \"received\": {}, \"fps\": {:.0f}, "
                            "\"sender_cpu_ns_per_frame\": {:.0f}, \"sender_cpu_ns_per_frame_without_copy\": {:.0f}, "
                            "\"receiver_cpu_ns_per_frame\": {:.0f}, \"fabric_copy_ns_per_frame\": {:.0f}, "
                            "\"sends_per_frame\": {:.3f}, \"credit_messages_per_frame\": {:.3f}}}",
                            size, mode == PollMode::kBusy ? "busy" : "event", frames, received, n / secs,
                            static_cast<double>(tx_cpu) / n, static_cast<double>(tx_cpu) / n - copy,
                            static_cast<double>(rx_cpu) / n, copy,
                            static_cast<double>(p.fabric.writes_posted(1)) / n,
                            static_cast<double>(p.fabric.sends_posted(0)) / n)
                    .c_str());
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    const std::uint64_t scale = quick ? 10 : 1;
    for (const PollMode mode : {PollMode::kEvent, PollMode::kBusy}) {
        run(4096, 400000 / scale, mode);
        run(65536, 100000 / scale, mode);
        run(3110400, 2000 / scale, mode);
    }
    return 0;
}
