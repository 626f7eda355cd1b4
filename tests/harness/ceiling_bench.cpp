// SPDX-License-Identifier: LGPL-2.1-or-later
// The software ceiling: how fast FrameSender and FrameReceiver go when the
// wire costs nothing. Both ends over the in-memory fabric, each on its own
// thread; the receiver releases every frame at once. Prints one JSON line
// per (size, poll mode): frames/s and CPU nanoseconds per frame per side,
// with the fabric's own payload copy (a NIC's DMA, here a memcpy on the
// sender's thread) reported apart and taken out of the sender's figure: it
// is calibrated by copying the same bytes alone, in thread CPU time, since
// timing each copy in place would cost more than a small frame does.
// Usage: rdmastream-ceiling [--quick] [--size BYTES] [--poll event|busy]
//        [--frames N]   (bench/, never a timed test; --help)
#include "stream_pair.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
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

constexpr const char* kUsage =
    "usage: rdmastream-ceiling [--quick] [--size BYTES] [--poll event|busy] [--frames N]\n"
    "  every size (4096, 65536, 3110400) in both poll modes unless --size or --poll picks;\n"
    "  --quick: a tenth of the frames; --frames: this many at every size picked\n";

} // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::optional<std::size_t> size;
    std::optional<PollMode> poll;
    std::uint64_t frames = 0; // 0: each size's own count
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--quick") {
            quick = true;
        } else if (a == "--size" && v != nullptr) {
            size = std::stoull(v);
            ++i;
        } else if (a == "--frames" && v != nullptr) {
            frames = std::stoull(v);
            ++i;
        } else if (a == "--poll" && v != nullptr && (std::string_view(v) == "event" || std::string_view(v) == "busy")) {
            poll = std::string_view(v) == "busy" ? PollMode::kBusy : PollMode::kEvent;
            ++i;
        } else {
            std::fputs(kUsage, a == "--help" ? stdout : stderr);
            return a == "--help" ? 0 : 2;
        }
    }
    const std::uint64_t scale = quick ? 10 : 1;
    const std::pair<std::size_t, std::uint64_t> sizes[] = {{4096, 400000}, {65536, 100000}, {3110400, 2000}};
    for (const PollMode mode : {PollMode::kEvent, PollMode::kBusy}) {
        if (poll && *poll != mode) continue;
        for (const auto& [bytes, count] : sizes) {
            if (size && *size != bytes) continue;
            run(bytes, frames != 0 ? frames : count / scale, mode);
        }
        if (size && *size != 4096 && *size != 65536 && *size != 3110400) {
            run(*size, frames != 0 ? frames : 100000 / scale, mode);
        }
    }
    return 0;
}
