// SPDX-License-Identifier: LGPL-2.1-or-later
// The smallest rdmastream receiver, over the installed library only:
// listens (or dials a listening sender), takes every frame in place, prints
// its number, size and a checksum, and gives the slot back.
//
//   receive_frames [--connect] [HOST][:PORT]
//
// Build: c++ -std=c++20 receive_frames.cpp $(pkg-config --cflags --libs rdmastream)
#include <rdmastream/error.hpp>
#include <rdmastream/receiver.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
    using namespace std::chrono_literals;
    const bool dial = argc > 1 && std::strcmp(argv[1], "--connect") == 0;
    const std::string where = argc > (dial ? 2 : 1) ? argv[dial ? 2 : 1] : "";
    try {
        const rdmastream::Endpoint ep = rdmastream::parse_endpoint(where);
        rdmastream::Door door = dial ? rdmastream::Door::dial(ep) : rdmastream::Door::listen(ep);
        if (!dial) std::fprintf(stderr, "receive_frames: listening on %s\n", door.describe().c_str());
        rdmastream::ReceiverConfig config;
        config.slots = 8;
        config.slot_size = 4 << 20;
        auto rx = rdmastream::Receiver::open(door, config);
        std::fprintf(stderr, "receive_frames: sender %s connected\n", rx->peer().c_str());
        std::uint64_t frames = 0;
        while (auto frame = rx->next(30s)) { // nullopt: the sender ended the stream
            std::uint32_t sum = 0;           // the frame is in registered memory: read in place
            for (const std::byte b : frame->payload) sum = sum * 31 + static_cast<std::uint8_t>(b);
            std::printf("frame %llu: %zu bytes, checksum %08x\n", static_cast<unsigned long long>(frame->header.sequence),
                        frame->payload.size(), sum);
            rx->release(frame->slot); // its credit goes back to the sender
            ++frames;
        }
        std::fprintf(stderr, "receive_frames: end of stream after %llu frames\n", static_cast<unsigned long long>(frames));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "receive_frames: %s\n", e.what());
        return 1;
    }
}
