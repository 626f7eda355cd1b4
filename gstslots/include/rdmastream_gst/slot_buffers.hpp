// SPDX-License-Identifier: LGPL-2.1-or-later
// SlotBuffers: GstBuffers that wrap the slots of a receive ring, recycled
// so the per-frame path allocates nothing once every slot has carried a
// frame. rdmasrc pushes them downstream and rdmarecv --gst into its
// appsrc: one implementation for both.
//
// Two kinds of object are kept and re-used, each by a GstMiniObject dispose
// hook that takes it back when its last reference goes (the way
// GstBufferPool itself takes its buffers back):
// * one GstMemory per ring slot, wrapping the slot's payload (writable: the
//   frame is downstream's until the memory comes home).
//   The slot is busy exactly as long as that memory is referenced anywhere
//   (a shallow copy or a sub-buffer downstream holds it too), so the credit
//   goes back when its last reference goes: the hook queues the slot.
// * GstBuffer shells. The hook takes the shell's memory out (the memory's
//   own hook then frees the slot), strips metas downstream added and puts
//   the shell on a free list. Shells are not bound to slots: downstream may
//   swap a buffer's memory, so a shell can outlive the frame.
// Not a GstBufferPool for the shells: its acquire and release go through a
// GstPoll, a socket read and write per buffer (GStreamer 1.22), where a
// free list under a mutex costs no syscall.
//
// Every memory and shell holds a std::shared_ptr to what they come home to
// (the free lists and the ring, `ring`, e.g. the FrameReceiver), so that
// outlives this object while buffers still point into it. The destructor
// frees what is home; what comes home after it is freed by its hook. Hooks
// run on whatever thread frees the buffer: they only queue, under a mutex.
// Members ending in _st belong to the one thread that drives the receiver
// (rdmasrc's streaming thread, rdmarecv's receive loop).
#pragma once

#include "rdmastream/waker.hpp"

#include <gst/gst.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rdmastream::gst {

class SlotBuffers {
public:
    // `ring` owns the memory the slots live in; it goes with the last buffer.
    // Empty: the owner keeps the ring alive past every buffer by other means.
    // `waker` (may be empty) is woken whenever a slot comes free, so the
    // thread that returns credits does so at once, not at its next look.
    SlotBuffers(std::uint32_t slots, std::shared_ptr<void> ring, std::shared_ptr<Waker> waker = {});
    ~SlotBuffers();
    SlotBuffers(const SlotBuffers&) = delete;
    SlotBuffers& operator=(const SlotBuffers&) = delete;

    // A buffer (one reference, writable metadata and memory) that
    // wraps `payload`, the frame in `slot`; `room` is the most that slot
    // can hold. Pts, duration, flags are cleared; metas but a GstVideoMeta
    // are gone. A slot is handed out again only after take_freed_st()
    // returned it: the transport gives the slot no new frame before that.
    GstBuffer* wrap_st(std::uint16_t slot, std::span<const std::byte> payload, std::size_t room);
    // Slots whose memory downstream let go since the last call; valid
    // until the next call. Give their credits back.
    std::span<const std::uint16_t> take_freed_st();
    // Slots downstream holds now: wrapped, their memory not yet home (one
    // that came home counts off at once, before take_freed_st returns it).
    // rdmasrc's FrameCopies::needed decides by it.
    std::uint32_t lent_st() const noexcept;
    // Slot memories that came home so far, on any thread: rdmarecv --gst
    // counts what its pipeline holds by it (GstSink::copy_if_held).
    std::uint64_t returned() const noexcept;

    // What was allocated so far (tests: constant once every slot was used).
    std::size_t shells_made() const noexcept { return shells_made_; }
    std::size_t memories_made() const noexcept { return memories_made_; }

    struct Home; // what memories and shells come back to (slot_buffers.cpp)

private:
    void wrap_slot_st(std::uint16_t slot, const std::byte* data, std::size_t room);
    GstBuffer* take_shell_st();

    std::shared_ptr<Home> home_;
    std::size_t shells_made_ = 0, memories_made_ = 0;
    std::uint64_t wrapped_ = 0;           // wrap_st calls
    std::vector<std::uint16_t> draining_; // swap partner of the freed list; capacity = slots
};

} // namespace rdmastream::gst
