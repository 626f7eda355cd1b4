// SPDX-License-Identifier: LGPL-2.1-or-later
// The smallest rdmastream sender, over the installed library only: dials a
// listening receiver (or listens for one), announces a format, and sends
// N frames of a counting pattern from registered memory, without a copy;
// prints each frame's checksum as receive_frames does.
//
//   send_frames [--listen] [HOST][:PORT] [FRAMES]
//
// Build: c++ -std=c++20 send_frames.cpp $(pkg-config --cflags --libs rdmastream)
#include <rdmastream/error.hpp>
#include <rdmastream/sender.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    const bool listen = argc > 1 && std::strcmp(argv[1], "--listen") == 0;
    const int first = listen ? 2 : 1;
    const std::string where = argc > first ? argv[first] : "";
    const long frames = argc > first + 1 ? std::atol(argv[first + 1]) : 100;
    constexpr std::size_t kFrameBytes = 1 << 20;
    try {
        const rdmastream::Endpoint ep = rdmastream::parse_endpoint(where);
        rdmastream::Door door = listen ? rdmastream::Door::listen(ep) : rdmastream::Door::dial(ep);
        rdmastream::SenderConfig config; // lossless, one receiver
        auto tx = rdmastream::Sender::open(door, config);
        std::fprintf(stderr, "send_frames: receiver %s connected\n", tx->peer().c_str());

        rdmastream::StreamFormat format;
        format.id = 1;
        format.max_frame_size = kFrameBytes;
        format.caps = "application/octet-stream";
        tx->set_format(format, 5s);

        // One frame's memory, registered once; each frame waits until the
        // previous one is delivered before it is rewritten (wait_done).
        rdmastream::FrameMemory memory = tx->memory().allocate(kFrameBytes);
        const auto bytes = memory.bytes().first(kFrameBytes);
        for (long n = 0; n < frames; ++n) {
            std::uint32_t sum = 0; // what the receiver prints for this frame, if it arrived intact
            for (std::size_t i = 0; i < bytes.size(); ++i) {
                bytes[i] = static_cast<std::byte>(n + i);
                sum = sum * 31 + static_cast<std::uint8_t>(bytes[i]);
            }
            rdmastream::FrameMeta meta;
            meta.pts = n * 40'000'000; // 25 frames/s, in nanoseconds
            meta.duration = 40'000'000;
            const auto number = tx->send(memory, bytes, meta, /*cookie=*/n, 5s);
            if (!number) { // not taken: with no waker, only because the receiver left
                std::fprintf(stderr, "send_frames: %s\n", tx->leaving().c_str());
                break;
            }
            tx->wait_done(*number, 5s);
            std::printf("frame %llu: %zu bytes, checksum %08x\n", static_cast<unsigned long long>(*number), bytes.size(),
                        sum);
        }
        tx->finish(5s);
        const rdmastream::StreamStats& s = tx->stats();
        std::fprintf(stderr, "send_frames: sent %llu frames\n", static_cast<unsigned long long>(s.frames));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "send_frames: %s\n", e.what());
        return 1;
    }
}
