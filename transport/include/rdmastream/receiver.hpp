// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiving end of a stream: owns a ring of registered slots the sender
// writes frames into, hands each frame out in place (no copy) and takes it
// back in any order.
//
//   Door door = Door::listen(Endpoint::parse("0.0.0.0:7000"));   // or Door::dial(...)
//   auto rx = Receiver::open(door, ReceiverConfig{});
//   while (auto f = rx->next(std::chrono::seconds(5))) { use(f->payload); rx->release(f->slot); }
//
// Thread rule: one thread drives a Receiver; ReceiverConfig::waker may be
// woken from any thread (a slot freed downstream, unlock, Ctrl-C).
#pragma once

#include "rdmastream/door.hpp"
#include "rdmastream/frame.hpp"
#include "rdmastream/key.hpp"
#include "rdmastream/policy.hpp"
#include "rdmastream/stream_states.hpp"
#include "rdmastream/stream_stats.hpp"
#include "rdmastream/waker.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream {

// What a receiver lets a sender make it pin, by default: a frame of up to
// 256 MiB (an 8K picture of 16-bit RGBA is 265 MB: raise it for those), a
// ring of up to 1 GiB.
inline constexpr std::uint32_t kDefaultMaxFrameBytes = 256u << 20;
inline constexpr std::uint64_t kDefaultMaxRingBytes = 1ull << 30;

struct ReceiverConfig {
    std::uint32_t slots = 8;
    std::uint32_t slot_size = 4u << 20; // bytes per slot, its 64-byte header included
    PollMode poll_mode = PollMode::kEvent;
    std::string device; // RDMA device by name; empty: the one the route picks
    bool live = false;  // ask the sender to drop frames rather than wait for this receiver
    // Interrupts open() and wait_frame() from any thread; empty: nothing
    // interrupts them but their timeouts.
    std::shared_ptr<Waker> waker;
    // The receiver decides what it pins: a stream format whose frames
    // exceed max_frame_bytes, or would grow the ring (slots x slot size)
    // past max_ring_bytes, is refused with a UserError naming the limit.
    std::uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
    std::uint64_t max_ring_bytes = kDefaultMaxRingBytes;
    // A pre-shared key the sender must prove before it learns where the
    // ring is; null: none, and a sender with a key refuses this receiver.
    std::shared_ptr<const PresharedKey> key;
    // Dialing: how long to keep trying. Listening: how long to wait for a
    // sender worth serving (refused ones do not end the wait).
    std::chrono::milliseconds open_timeout{60000};
    // Listening: a sender silent after connecting, or whose first frame has
    // not come this long after it connected, is refused and the next one
    // served.
    std::chrono::milliseconds handshake_timeout{10000};
    // Listening: a new sender is on probation until its first frame, which
    // must carry a format and pass this check (throw ProtocolError to refuse
    // the sender: the next one is served). Empty: any first frame with a
    // format passes.
    std::function<void(const ReceivedFrame& first, const std::string& peer)> check_first_frame;
    // A memory window per slot, bound while the sender holds the slot's
    // credit: the NIC refuses a write into a slot the consumer holds. Off by
    // default (docs/security.md says why); on a device without windows it
    // stays off, with one warning.
    bool memory_windows = false;
    // Told the receiver's one warning (windows asked for, the device has
    // none); empty: stderr.
    std::function<void(const std::string&)> warn;
    // Two paths (open with two Doors; docs/reliability.md): path B's RDMA
    // device (empty: the one its route picks); how long a live stream
    // waits for a frame one path may still bring once the other brought a
    // later one, before it is a gap; whether a frame's second copy is
    // compared byte by byte with the first while the first is held (else
    // by header). Each path's loss and return is one line to `log`
    // (empty: stderr).
    std::string device_b;
    std::chrono::milliseconds path_skew{50};
    bool compare_copies = true;
    std::function<void(const std::string&)> log;
    // A stream's flows after the first (a programme's audio and data,
    // format.hpp): each gets flow_slots slots when its first format comes,
    // as large as that format's frames; a format for flow max_flows or above
    // is refused (UserError). max_ring_bytes counts every flow's slots.
    // slots and slot_size are flow 0's.
    std::uint32_t flow_slots = 16;
    std::uint32_t max_flows = 8;
};

class Receiver {
public:
    // Opens the receiving end through `door`: dials the sender (retrying
    // while it is not listening yet) or waits for one to dial in, proves
    // keys both ways, registers the ring and hands it to the sender; a
    // listening receiver then holds a new sender on probation until its
    // first frame (ReceiverConfig::check_first_frame), refusing and logging
    // the ones that fail, and serves the next. nullptr when the config's
    // waker interrupted the wait (the caller knows why: Ctrl-C, unlock);
    // TimeoutError after open_timeout; ConnectionError, ProtocolError or
    // UserError when the peer dialled cannot be served.
    static std::unique_ptr<Receiver> open(Door& door, const ReceiverConfig& config);
    // The same over two paths (docs/reliability.md), `a` and `b` both
    // listening or both dialling: each frame comes over both (from one
    // sender through two Doors), and is handed out once, in order, from
    // whichever path brought it first. Path A founds the stream; path B
    // joins it when it comes up, and a path that is lost (named once in
    // config.log) is taken back when its sender dials it again (listening)
    // or redialled in the background (dialling). Each Door keeps its own
    // allow list and pending limits. Slot numbers then run to
    // slot_numbers(); release() takes them as before.
    static std::unique_ptr<Receiver> open(Door& a, Door& b, const ReceiverConfig& config);
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;
    // Hangs up (the NIC lets go of the ring) before the ring goes.
    ~Receiver();

    // What wait_frame() found.
    struct Arrival {
        enum Kind { kFrame, kEnd, kWoken };
        Kind kind = kWoken;
        ReceivedFrame frame; // kFrame
    };
    // The next frame; kEnd at the end of the stream (the sender said so);
    // kWoken as soon as the config's waker is woken. Throws ConnectionError
    // when the connection failed, ProtocolError when the sender broke the
    // protocol, TimeoutError when nothing (no frame, no keepalive) came from
    // the sender for `idle`.
    Arrival wait_frame(std::chrono::milliseconds idle);
    // wait_frame() for a caller with nothing to do on a wake: the next
    // frame, or nullopt at the end of the stream.
    std::optional<ReceivedFrame> next(std::chrono::milliseconds idle);
    // The consumer is done with the frame in `slot`: its credit goes back
    // to the sender (coalesced with others). Never blocks.
    void release(std::uint16_t slot);
    // This receiver has every frame it wants: tells the sender so (its
    // stream ends as a success) and hangs up. Only the destructor may
    // follow. Never throws.
    void leave() noexcept;

    const StreamStats& stats() const noexcept;
    ReceiverState state() const noexcept;
    std::string peer() const; // the sender's address, for messages
    std::uint32_t slots() const noexcept;     // the ring's, now (a format may grow it)
    std::uint32_t slot_size() const noexcept; // header included
    std::uint32_t max_payload() const noexcept;
    bool huge_pages() const noexcept;
    bool memory_windows() const noexcept; // asked for, and the device has them
    // Flow `flow`'s format in force (nullptr: never announced, or a flow
    // id past kMaxFlows): the last one the sender announced before the
    // frame wait_frame() returned last. A programme's sender announces
    // every flow before its first frame (docs/protocol.md, "Flows"), so at
    // that frame these are the whole programme: what an output that cannot
    // add a stream later (a file's header) needs. Valid until the next
    // wait_frame().
    const StreamFormat* format(std::uint8_t flow) const noexcept;
    // Slot numbers a frame may carry (what tables by slot need): slots()'s
    // capacity for one path, more for two.
    std::uint32_t slot_numbers() const noexcept;
    // Each path's counters (two paths); empty for one.
    std::vector<PathReport> paths() const;
    // The same into `into`, reusing its storage: once it has held these
    // paths' names, no allocation, so a streaming thread may ask as often
    // as it publishes its counters.
    void paths(std::vector<PathReport>& into) const;

    struct Impl;

private:
    explicit Receiver(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

} // namespace rdmastream
