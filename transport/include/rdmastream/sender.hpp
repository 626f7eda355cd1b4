// SPDX-License-Identifier: LGPL-2.1-or-later
// The sending end of a stream: writes each frame, from the caller's
// registered memory and without a copy, into a receiver's ring slot it
// holds a credit for, with one RDMA WRITE_WITH_IMM. One receiver (either end
// dials) or a fan-out to several that dial in: the same calls for both.
//
//   Door door = Door::dial(Endpoint::parse("198.18.0.2:7000"));
//   auto tx = Sender::open(door, SenderConfig{});
//   FrameMemory mem = tx->memory().allocate(frame_bytes);
//   tx->set_format(format, timeout);
//   ... fill mem.bytes() ...; auto n = tx->send(mem, mem.bytes(), meta, cookie, timeout);
//   tx->wait_done(*n, timeout);   // or learn it through SenderConfig::on_done
//   tx->finish(timeout);
//
// Thread rule: one thread drives a Sender; on_done and log run on it.
// SenderConfig::waker may be woken from any thread: it interrupts open(),
// send() and wait_done().
#pragma once

#include "rdmastream/clock_anchor.hpp"
#include "rdmastream/door.hpp"
#include "rdmastream/frame.hpp"
#include "rdmastream/key.hpp"
#include "rdmastream/memory.hpp"
#include "rdmastream/policy.hpp"
#include "rdmastream/stream_states.hpp"
#include "rdmastream/stream_stats.hpp"
#include "rdmastream/waker.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

// The largest ring a sender takes (its queues are sized before the
// receiver's ring is known): a receiver offering more slots is refused.
inline constexpr std::uint32_t kMaxSenderSlots = 256;

struct SenderConfig {
    Policy policy = Policy::kLossless;
    FrameDoneFn on_done;                       // may be empty
    PollMode poll_mode = PollMode::kEvent;
    std::string device; // RDMA device by name; empty: the one the route picks
    // Interrupts open(), send() and wait_done(); empty: only their timeouts
    // end them. A fan-out's send() and wait_done() wait through a wake
    // (every receiver takes each frame; member_timeout bounds each one).
    std::shared_ptr<Waker> waker;
    // A pre-shared key both ends must prove; null: none, and a receiver with
    // a key refuses this sender.
    std::shared_ptr<const PresharedKey> key;
    // Frames the caller keeps out at most before it waits for the oldest
    // (wait_done); 0: as many as the receiver's ring has slots.
    std::uint32_t max_in_flight = 0;
    // Dialing: how long to keep trying. Listening: how long to wait for the
    // receiver(s).
    std::chrono::milliseconds open_timeout{60000};
    std::chrono::milliseconds keepalive{1000}; // idle time before a keepalive goes out
    // A control message the receiver's NIC has not acknowledged within this
    // means the receiver stopped taking messages: the sender gives up.
    std::chrono::milliseconds ack_limit{5000};
    // A fan-out (listening Door only): 0, one receiver; N, open() waits for
    // N receivers to dial in, and more may join while it streams, each with
    // its own ring, credits and policy, each frame written to all of them
    // from the same memory.
    std::size_t receivers = 0;
    std::size_t max_receivers = 64; // a fan-out's receivers at once; one more is refused "busy"
    // How long one fan-out receiver may hold the others back (no credit, no
    // acknowledgement) before it is cut, with a message naming it.
    std::chrono::milliseconds member_timeout{5000};
    // Where a fan-out's messages go (joins, receivers dropped); empty: stderr.
    std::function<void(const std::string&)> log;
    // Two paths (open with two Doors): path B's RDMA device (empty: the one
    // its route picks).
    std::string device_b;
};

// One receiver of a fan-out, for reports.
struct ReceiverReport {
    std::string peer;
    StreamStats stats;
    Policy policy = Policy::kLossless;
    bool left = false; // dropped mid-stream (failed, left or stuck): stats up to then
    std::vector<PathReport> paths; // a receiver over two paths (Sender::open(a, b)): each one's; else empty
};

class Sender {
public:
    // Opens the sending end through `door`: dials the receiver (retrying
    // while it is not listening yet) or waits for it (or, with
    // SenderConfig::receivers, for that many) to dial in; keys proven both
    // ways, the receiver's ring in hand. nullptr when the config's waker
    // interrupted the wait; TimeoutError after open_timeout.
    static std::unique_ptr<Sender> open(Door& door, const SenderConfig& config);
    // The same over two paths to one receiver (docs/reliability.md), `a`
    // and `b` both dialling or both listening: every frame is written over
    // both from the same memory (no copy), and a path that is lost (named
    // once in config.log) costs no frame; it is redialled in the background
    // (dialling) or taken back when the receiver dials it again
    // (listening). Path A founds the stream; path B joins it. Not with
    // config.receivers (a fan-out).
    static std::unique_ptr<Sender> open(Door& a, Door& b, const SenderConfig& config);
    Sender(const Sender&) = delete;
    Sender& operator=(const Sender&) = delete;
    // stop(), then the connections go.
    ~Sender();

    // Where frame memory for this sender is registered.
    MemoryDomain memory() const;
    // Frames of a flow the caller may have out at once (its slots in the
    // receiver's ring, or max_in_flight), plus the one a live sender keeps
    // pending.
    std::size_t depth(std::uint8_t flow = 0) const noexcept;
    // The largest payload every receiver's slots of a flow take now (0 for
    // a flow whose format was never announced).
    std::uint32_t max_payload(std::uint8_t flow = 0) const noexcept;

    // A stream carries up to kMaxFlows flows (format.hpp): a programme's
    // video, audio and data, each with its own format, slots, credits and
    // frame numbers, on one clock. A flow exists once set_format announced
    // it (StreamFormat::flow); its frames say it in FrameMeta::flow. Flow 0
    // is a one-flow stream's. A fan-out carries every flow to every
    // receiver; one that joins late gets each flow's format first.
    //
    // Offers one frame: `payload` lies in `memory` and stays unchanged until
    // on_done(cookie, ...) fires for it (or wait_done returns). Lossless:
    // waits up to `timeout` for a free slot (TimeoutError after it). Live:
    // never waits. Returns the frame's number in its flow (dropped frames count too), or
    // nullopt when the frame was not taken: the waker interrupted the wait
    // (it may be offered again), or the receiver left (state() kLeft: it
    // has every frame it wants, the stream's end and no failure). UserError
    // if it does not fit a slot; ConnectionError when the connection
    // failed. A fan-out never throws for one receiver: it drops that one,
    // with a message.
    std::optional<std::uint64_t> send(const FrameMemory& memory, std::span<const std::byte> payload,
                                      const FrameMeta& meta, std::uint64_t cookie,
                                      std::chrono::milliseconds timeout);
    // Announces a flow's format (format.flow); its frames sent after it
    // carry its id. Returns once the receiver(s) took it (and gave the flow
    // slots, or larger ones, if they had to), or the receiver left (state()
    // kLeft).
    void set_format(const StreamFormat& format, std::chrono::milliseconds timeout);
    // Tells the receiver(s) which absolute instant pts 0 is (clock_anchor.hpp;
    // anchor_now() reads one off this host's clocks); frames after it are on
    // it, and receivers that join a fan-out later learn it too. Again when
    // this host's clock is stepped. Waits up to `timeout` for the control
    // message before it, not for the receiver.
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout);
    // Credits, completions, keepalives, receivers joining, the receiver
    // leaving (state() kLeft); never blocks.
    void progress();
    // Whether send() would post a frame now rather than keep it pending
    // (where the live policy may drop it): a caller that must write a frame
    // first (a copy) asks, so that it never writes one that is thrown away.
    bool takes_frame_now(std::uint8_t flow = 0);
    // A frame the caller dropped without offering it (takes_frame_now() said
    // no): counted as offered and dropped, and receivers see its number as a
    // gap. No on_done.
    void skip_frame(std::uint8_t flow = 0) noexcept;
    // Waits until frame `number` of `flow` has its memory free (delivered or dropped);
    // false when the waker interrupted the wait first or the receiver left
    // (state() kLeft; its memory is free once the Sender is stopped);
    // TimeoutError after `timeout`.
    bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow = 0);
    // Waits until every frame is delivered, sends the end of the stream,
    // waits for its acknowledgement and hangs up. Returns at once if the
    // receiver had left already (state() kLeft).
    void finish(std::chrono::milliseconds timeout);
    // Stops every connection at once; frames still out come back through
    // on_done as dropped. Only the destructor may follow.
    void stop() noexcept;

    StreamStats stats() const noexcept;
    // One entry per fan-out receiver, those dropped included; empty for a
    // single receiver (stats() is its).
    std::vector<ReceiverReport> receivers() const;
    // Each path's counters (two paths); empty for one.
    std::vector<PathReport> paths() const;
    // A single receiver's stream state; a fan-out's is kStreaming until
    // finish() or stop() (its receivers leave one by one: receivers()).
    SenderState state() const noexcept;
    // Once state() is kLeft, what the receiver's leaving means, for a log:
    // "the receiver ADDR left after N frames: it has every frame it wants".
    // Empty before.
    std::string leaving() const;
    // In force: live if this sender or (a single) receiver asked for it.
    Policy policy() const noexcept;
    // The receiver's address, or the fan-out's listening one.
    std::string peer() const;
    // A single receiver's ring (slots, bytes per slot); 0, 0 for a fan-out.
    std::uint32_t ring_slots() const noexcept;
    std::uint32_t ring_slot_size() const noexcept;

    struct Impl;

private:
    explicit Sender(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

} // namespace rdmastream
