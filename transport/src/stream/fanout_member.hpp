// SPDX-License-Identifier: LGPL-2.1-or-later
// One receiver of a fan-out (fanout_sender.hpp), over one path or two.
// Over one, its FrameSender. Over two, a two-path sender
// (sender_two_paths.cpp) that took the receiver's first connection over
// when its second joined: each frame posted on both, a path that dies
// costing the receiver nothing, as for a Sender of one receiver over two
// paths. The fan-out drives every member through this, from its one thread.
#pragma once

#include "stream/frame_sender.hpp"
#include "stream/sender_impl.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

namespace rdmastream {

class FanoutMember {
public:
    virtual ~FanoutMember() = default;

    // FrameSender::send's contract, the frame numbered as the stream
    // numbers it; false when the options' waker ended its wait for a slot.
    // Each path posts with its own device's key of `memory`.
    virtual bool send(std::span<const std::byte> payload, const FrameMemory::Impl& memory, const FrameMeta& meta,
                      std::uint64_t token, std::chrono::milliseconds timeout) = 0;
    virtual std::uint32_t max_payload(std::uint8_t flow) const noexcept = 0;
    virtual bool has_flow(std::uint8_t flow) const noexcept = 0;
    // Whether it would post the flow's next frame now (a free slot, for a
    // live member); current after progress().
    virtual bool has_free_slot(std::uint8_t flow) = 0;
    virtual void skip_frame(std::uint8_t flow) noexcept = 0;
    virtual void progress() = 0;
    // Returns once it is done with the frame; TimeoutError after `timeout`.
    virtual void wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) = 0;
    virtual void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) = 0;
    virtual void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) = 0;
    virtual void finish(std::chrono::milliseconds timeout) = 0;
    virtual StreamStats stats() const = 0;
    virtual Policy policy() const noexcept = 0;
};

// Over one path: `tx` posts with the keys of the memory domain's device
// `device`.
std::unique_ptr<FanoutMember> one_path_member(std::unique_ptr<FrameSender> tx, std::size_t device);

// Over two: `one` (a member over one path so far, with frames perhaps in
// flight: the fan-out's on_done gets theirs as before) taken over by a
// two-path sender that goes on at `so_far`; its other path (the same
// receiver's second connection) then joins with attach_member_path. `c`:
// its on_done (the fan-out's), log, waker and poll mode.
std::unique_ptr<FanoutMember> two_path_member(std::unique_ptr<FanoutMember> one, const StreamSoFar& so_far,
                                              const SenderConfig& c);
bool has_two_paths(const FanoutMember& member) noexcept;
// A two-path member's path (0: A, 1: B) over a new connection, posting
// with the keys of the memory domain's device `device` (throws
// std::logic_error for a member over one path).
void attach_member_path(FanoutMember& member, std::size_t path, std::unique_ptr<FrameSender> tx, std::size_t device);
// A member's paths (two paths only; empty for one).
std::vector<PathReport> member_paths(const FanoutMember& member);

} // namespace rdmastream
