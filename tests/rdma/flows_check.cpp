// SPDX-License-Identifier: LGPL-2.1-or-later
// rdma-flows-check: a programme of two flows through the public API, over a
// real RDMA device (the bed's rxe). The sender announces flow 0 ("video",
// frames of --video-bytes) and flow 1 ("audio", --audio-bytes) and sends two
// audio frames after each video frame, every byte a function of the flow,
// the frame's number and its offset; the receiver checks that each flow's
// frames come numbered from 0, in order, in their own format, byte for byte,
// and that the two flows' slots are apart. With --memory-windows the ring
// has a window per slot, every flow's slots included. With --receivers N the
// sender listens and fans the programme out to N receivers that dial it, and
// more that join while it streams (they get each flow's format first, and
// frames from where the stream is: --late).
//
//   rdma-flows-check receive [--port P | --connect HOST:PORT [--late]] [--frames N] [--memory-windows]
//   rdma-flows-check send HOST[:PORT] [--frames N] [--receivers N --fps F]
#include "rdmastream/error.hpp"
#include "rdmastream/receiver.hpp"
#include "rdmastream/sender.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace rs = rdmastream;
using namespace std::chrono_literals;

namespace {

struct Options {
    std::string role, peer;
    std::uint16_t port = 18620;
    std::uint64_t frames = 300; // video frames; twice as many audio frames
    std::uint32_t video_bytes = 65536, audio_bytes = 4096;
    bool memory_windows = false;
    std::string connect;     // receive: dial a listening sender (a fan-out) here
    bool late = false;       // receive: each flow may start at any frame (joined a running fan-out)
    unsigned receivers = 0;  // send: listen on HOST:PORT and fan out to this many (and later joiners)
    double fps = 0;          // send: video frames per second (0: as fast as credits allow)
};

std::byte pattern(unsigned flow, std::uint64_t number, std::size_t at) {
    return static_cast<std::byte>((flow * 131 + number * 7 + at) & 0xff);
}

// Frame `number` of `flow`: its size varies so that a short or long write shows.
std::size_t frame_size(const Options& o, unsigned flow, std::uint64_t number) {
    const std::size_t full = flow == 0 ? o.video_bytes : o.audio_bytes;
    return full - (number % 5) * (full / 8);
}

rs::StreamFormat format_of(const Options& o, unsigned flow) {
    rs::StreamFormat f;
    f.flow = static_cast<std::uint8_t>(flow);
    f.id = 1;
    f.max_frame_size = flow == 0 ? o.video_bytes : o.audio_bytes;
    f.caps = flow == 0 ? "video/x-flows-check" : "audio/x-flows-check";
    return f;
}

int receive(const Options& o) {
    rs::Door door = o.connect.empty() ? rs::Door::listen(rs::Endpoint{"", o.port})
                                      : rs::Door::dial(rs::parse_endpoint(o.connect));
    if (o.connect.empty()) std::printf("receiver: listening on %s\n", door.describe().c_str());
    std::fflush(stdout);
    rs::ReceiverConfig c;
    c.slots = 8;
    c.slot_size = o.video_bytes + 4096;
    c.memory_windows = o.memory_windows;
    c.open_timeout = 60s;
    auto rx = rs::Receiver::open(door, c);
    std::array<std::uint64_t, 2> next{0, 0};
    std::array<bool, 2> started{!o.late, !o.late}; // --late: a flow's first frame sets where it starts
    std::array<std::set<std::uint16_t>, 2> slots;
    while (auto f = rx->next(20s)) {
        const unsigned flow = f->header.flow;
        if (flow > 1) throw rs::ProtocolError(fmt::format("a frame of flow {}: only 0 and 1 were sent", flow));
        const std::uint64_t n = f->header.sequence;
        if (!started[flow]) {
            started[flow] = true;
            next[flow] = n;
        }
        if (n != next[flow]) {
            throw rs::ProtocolError(fmt::format("flow {}: frame {} where frame {} was due", flow, n, next[flow]));
        }
        ++next[flow];
        if (f->format == nullptr || f->format->flow != flow || f->format->caps != format_of(o, flow).caps) {
            throw rs::ProtocolError(fmt::format("flow {} frame {}: not in its flow's format", flow, n));
        }
        if (f->payload.size() != frame_size(o, flow, n)) {
            throw rs::ProtocolError(fmt::format("flow {} frame {}: {} bytes, {} sent", flow, n, f->payload.size(),
                                                frame_size(o, flow, n)));
        }
        for (std::size_t i = 0; i < f->payload.size(); ++i) {
            if (f->payload[i] != pattern(flow, n, i)) {
                throw rs::ProtocolError(fmt::format("flow {} frame {}: byte {} differs from what was sent", flow, n, i));
            }
        }
        slots[flow].insert(f->slot);
        rx->release(f->slot);
    }
    for (const std::uint16_t s : slots[0]) {
        if (slots[1].count(s) != 0) throw rs::ProtocolError(fmt::format("slot {} carried frames of both flows", s));
    }
    if (!started[0] || !started[1] || next[0] != o.frames || next[1] != 2 * o.frames) {
        throw std::runtime_error(fmt::format("the stream ended after {} video and {} audio frames, {} and {} were sent",
                                             next[0], next[1], o.frames, 2 * o.frames));
    }
    std::printf("receiver: ok: video frames to %llu in slots %u..%u and audio frames to %llu in slots %u..%u, in "
                "order, byte for byte (%s)\n",
                static_cast<unsigned long long>(next[0] - 1), *slots[0].begin(), *slots[0].rbegin(),
                static_cast<unsigned long long>(next[1] - 1), *slots[1].begin(), *slots[1].rbegin(),
                rx->memory_windows() ? "a memory window per slot" : "no memory windows");
    return 0;
}

int send(const Options& o) {
    rs::Door door = o.receivers > 0 ? rs::Door::listen(rs::parse_endpoint(o.peer))
                                    : rs::Door::dial(rs::parse_endpoint(o.peer));
    rs::SenderConfig c;
    c.open_timeout = 60s;
    c.receivers = o.receivers;
    auto tx = rs::Sender::open(door, c);
    for (unsigned flow = 0; flow < 2; ++flow) tx->set_format(format_of(o, flow), 10s);
    // A buffer per frame each flow may have out, from one registered region.
    const std::array<std::size_t, 2> depth{tx->depth(0), tx->depth(1)};
    const std::array<std::uint32_t, 2> bytes{o.video_bytes, o.audio_bytes};
    rs::FrameMemory memory = tx->memory().allocate(depth[0] * bytes[0] + depth[1] * bytes[1]);
    std::array<std::vector<std::uint64_t>, 2> number_in{std::vector<std::uint64_t>(depth[0]),
                                                        std::vector<std::uint64_t>(depth[1])};
    std::array<std::uint64_t, 2> sent{0, 0};
    const auto send_one = [&](unsigned flow) {
        const std::uint64_t n = sent[flow]++;
        const std::size_t b = n % depth[flow];
        if (n >= depth[flow]) tx->wait_done(number_in[flow][b], 10s, static_cast<std::uint8_t>(flow));
        const std::size_t at = (flow == 0 ? 0 : depth[0] * bytes[0]) + b * bytes[flow];
        const auto frame = memory.bytes().subspan(at, frame_size(o, flow, n));
        for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = pattern(flow, n, i);
        rs::FrameMeta meta;
        meta.flow = static_cast<std::uint8_t>(flow);
        meta.pts = static_cast<std::int64_t>(flow == 0 ? n * 40'000'000 : n * 20'000'000); // one clock
        const auto number = tx->send(memory, frame, meta, n, 10s);
        if (!number || *number != n) throw std::runtime_error(fmt::format("flow {} frame {} not taken", flow, n));
        number_in[flow][b] = *number;
    };
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t n = 0; n < o.frames; ++n) {
        if (o.fps > 0) { // a live source's pace, so that receivers may join while it streams
            std::this_thread::sleep_until(start + std::chrono::duration<double>(static_cast<double>(n) / o.fps));
            tx->progress();
        }
        send_one(0);
        send_one(1);
        send_one(1);
    }
    tx->finish(10s);
    std::printf("sender: ok: %llu video and %llu audio frames sent, %u + %u slots\n",
                static_cast<unsigned long long>(sent[0]), static_cast<unsigned long long>(sent[1]),
                static_cast<unsigned>(depth[0] - 1), static_cast<unsigned>(depth[1] - 1));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"rdma-flows-check: two flows (video, audio) of one stream over RDMA, checked byte for byte"};
    app.require_subcommand(1);
    CLI::App* rx = app.add_subcommand("receive", "listen for the sender and check every frame of both flows");
    rx->add_option("--port", o.port, "rdma_cm port to listen on")->capture_default_str();
    rx->add_flag("--memory-windows", o.memory_windows, "a memory window per slot");
    rx->add_option("--connect", o.connect, "dial a listening sender (a fan-out) at HOST:PORT instead of listening");
    rx->add_flag("--late", o.late, "each flow may start at any frame (a receiver joining a running fan-out)");
    CLI::App* tx = app.add_subcommand("send", "dial the receiver and send both flows");
    tx->add_option("peer", o.peer, "the receiver, HOST[:PORT]; with --receivers, where to listen")->required();
    tx->add_option("--receivers", o.receivers, "listen and fan out to this many receivers (and later joiners)");
    tx->add_option("--fps", o.fps, "video frames per second (0: as fast as the credits allow)");
    for (CLI::App* sub : {rx, tx}) {
        sub->add_option("--frames", o.frames, "video frames (audio: twice as many)")->capture_default_str();
    }
    CLI11_PARSE(app, argc, argv);
    try {
        return rx->parsed() ? receive(o) : send(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdma-flows-check: %s\n", e.what());
        return 1;
    }
}
