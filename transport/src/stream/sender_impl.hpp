// SPDX-License-Identifier: LGPL-2.1-or-later
// What a Sender is underneath (sender.hpp): one receiver (a FrameSender,
// sender_single.cpp) or a fan-out (a FanoutSender, sender_fanout.cpp), the
// same calls over both. Opening them is sender.cpp's.
#pragma once

#include "stream/frame_sender.hpp"
#include "memory/frame_memory_impl.hpp"
#include "rdmastream/sender.hpp"

#include "setup/door_impl.hpp"

#include <array>
#include <functional>
#include <memory>

namespace rdmastream {

struct Sender::Impl {
    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    virtual ~Impl() = default;

    virtual std::shared_ptr<ibv_pd> pd() const = 0;
    virtual std::size_t depth(std::uint8_t flow) const noexcept = 0;
    virtual std::uint32_t max_payload(std::uint8_t flow) const noexcept = 0;
    // `payload` lies in `memory`, of this sender's domain (sender.cpp checks).
    virtual std::optional<std::uint64_t> send(std::span<const std::byte> payload, const FrameMemory::Impl& memory,
                                              const FrameMeta& meta, std::uint64_t cookie,
                                              std::chrono::milliseconds timeout) = 0;
    virtual void set_format(const StreamFormat& format, std::chrono::milliseconds timeout) = 0;
    virtual void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) = 0;
    virtual void progress() = 0;
    virtual bool takes_frame_now(std::uint8_t flow) = 0;
    virtual void skip_frame(std::uint8_t flow) noexcept = 0;
    virtual bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) = 0;
    virtual void finish(std::chrono::milliseconds timeout) = 0;
    virtual void stop() noexcept = 0;
    virtual StreamStats stats() const noexcept = 0;
    virtual std::vector<ReceiverReport> receivers() const = 0;
    virtual std::vector<PathReport> paths() const { return {}; } // two paths: each one's
    virtual SenderState state() const noexcept = 0;
    virtual std::string leaving() const = 0;
    virtual Policy policy() const noexcept = 0;
    virtual std::string peer() const = 0;
    virtual std::uint32_t ring_slots() const noexcept = 0;
    virtual std::uint32_t ring_slot_size() const noexcept = 0;

    std::shared_ptr<MemoryDomain::Impl> domain; // made once, on first memory()
};

// The options every FrameSender of this Sender gets.
SenderOptions sender_options(const SenderConfig& c);

// One receiver: dials the Door's peer, or waits on its listener (then,
// `claim` set, any other receiver that dials is told "busy" while it streams).
std::unique_ptr<Sender::Impl> single_sender(std::unique_ptr<FrameSender> tx, const SenderConfig& c,
                                            std::unique_ptr<DoorClaim> claim);
// What a two-path sender is told of paths that come back (stream/
// path_rejoin.hpp); any may be empty.
struct TwoPathHooks {
    Waker* mail = nullptr; // rung when a path waits to be taken
    // A path back: its FrameSender (nullptr: none waits), its index, and the
    // memory domain's device it posts with.
    std::function<std::unique_ptr<FrameSender>(std::size_t& path, std::size_t& device)> take_joined;
    std::function<void(std::size_t path)> lost; // told each loss
    // A lost path's RDMA device went away (FrameSender::device_removed) and
    // its connection is gone: the domain's device `device` lets go of all
    // it held there, so that the device can go and come back.
    std::function<void(std::size_t device)> release_device;
};
// Where a stream is when a two-path sender takes a fan-out member's
// connection over (fanout_member.hpp).
struct StreamSoFar {
    std::array<std::uint64_t, kMaxFlows> next{};           // each flow's next frame number
    std::array<std::optional<StreamFormat>, kMaxFlows> formats; // each flow's in force
    std::optional<ClockAnchor> clock;
};
// A two-path sender over `tx`, a connection that has streamed so far on
// its own (a fan-out member's), posting with the keys of the memory
// domain's device `device`: it goes on at `so_far`'s frame numbers, and
// the frames `tx` has in flight still end in c.on_done as they would have.
std::unique_ptr<Sender::Impl> two_path_sender_at(std::unique_ptr<FrameSender> tx, std::size_t device,
                                                 const StreamSoFar& so_far, const SenderConfig& c);
// One receiver over two paths (sender_two_paths.cpp): path p's memory keys
// are the domain's device p. Path B's FrameSender may be null: it starts
// lost and comes through the hooks.
std::unique_ptr<Sender::Impl> two_path_sender(std::array<std::unique_ptr<FrameSender>, 2> paths,
                                              const SenderConfig& c, TwoPathHooks hooks = {});
// A two-path sender's path back over a new connection (its FrameSender,
// through the handshake), posting with the keys of the memory domain's
// device `device`; the old connection, if not known lost yet, goes. It
// takes the stream's formats as the stream goes on, without waiting.
void attach_path(Sender::Impl& sender, std::size_t path, std::unique_ptr<FrameSender> tx, std::size_t device);
// A fan-out on the Door's listener: waits for c.receivers of them (nullptr
// when the waker is woken first).
std::unique_ptr<Sender::Impl> fanout_sender(std::unique_ptr<DoorClaim> claim, const std::string& where,
                                            const SenderConfig& c);
// The same with a second door, on which receivers' second paths join
// (their first through door A, as one path's).
std::unique_ptr<Sender::Impl> fanout_sender(std::unique_ptr<DoorClaim> claim, std::unique_ptr<DoorClaim> claim_b,
                                            const std::string& where, const SenderConfig& c);

} // namespace rdmastream
