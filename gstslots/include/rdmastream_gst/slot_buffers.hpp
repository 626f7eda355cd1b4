// SlotBuffers: GstBuffers that wrap the slots of a receive ring, recycled
// so the per-frame path allocates nothing once every slot has carried a
// frame. rdmasrc pushes them downstream and rdmarecv --gst into its
// appsrc: one implementation for both.
//
// Two kinds of object are kept and re-used:
// * one GstMemory per ring slot, wrapping the slot's payload (writable: the
//   frame is downstream's until the memory comes home).
//   The slot is busy exactly as long as that memory is referenced anywhere
//   (a shallow copy or a sub-buffer downstream holds it too), so the credit
//   goes back when its last reference goes: its dispose hook queues the
//   slot and revives the memory for the slot's next frame.
// * GstBuffer shells. A shell's dispose hook takes its memory out (the
//   memory's own hook then frees the slot), strips metas downstream added
//   and puts the shell on a free list. Shells are not bound to slots:
//   downstream may swap a buffer's memory, so a shell can outlive the frame.
//
// Reference counted by hand: the owner (rdmasrc's state, rdmarecv's
// GstSink) holds one reference, every memory and every shell downstream one
// more, so the ring (`ring`, e.g. the FrameReceiver) outlives the owner
// while buffers still point into it. Dispose hooks run on whatever thread
// frees the buffer: they only queue, under `mutex_`. Members ending in _st
// belong to the one thread that drives the receiver (rdmasrc's streaming
// thread, rdmarecv's receive loop).
#pragma once

#include "rdmastream/waker.hpp"

#include <gst/gst.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
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
    SlotBuffers(const SlotBuffers&) = delete;
    SlotBuffers& operator=(const SlotBuffers&) = delete;

    void unref() noexcept; // deletes at zero
    struct Unref {
        void operator()(SlotBuffers* b) const noexcept { b->unref(); }
    };

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
    std::uint32_t lent_st() const noexcept {
        return static_cast<std::uint32_t>(wrapped_ - returned_.load(std::memory_order_relaxed));
    }
    // Slot memories that came home so far, on any thread: rdmarecv --gst
    // counts what its pipeline holds by it (GstSink::copy_if_held).
    std::uint64_t returned() const noexcept { return returned_.load(std::memory_order_relaxed); }

    // What was allocated so far (tests: constant once every slot was used).
    std::size_t shells_made() const noexcept { return shells_made_; }
    std::size_t memories_made() const noexcept { return memories_made_; }

private:
    struct Slot {
        SlotBuffers* owner = nullptr;
        std::uint16_t index = 0;
        GstMemory* memory = nullptr; // ours while the slot is free; nullptr before its first frame
        const std::byte* data = nullptr;
        std::size_t room = 0;
    };
    ~SlotBuffers();
    static gboolean memory_disposed(GstMiniObject* obj);
    static gboolean shell_disposed(GstMiniObject* obj);
    void wrap_slot_st(Slot& s, const std::byte* data, std::size_t room);
    GstBuffer* new_shell_st();

    std::atomic<int> refs_{1};
    std::shared_ptr<void> ring_;
    std::shared_ptr<Waker> waker_;
    std::unique_ptr<Slot[]> slots_; // fixed addresses: the memories point at their Slot
    std::uint32_t slot_count_;
    std::size_t shells_made_ = 0, memories_made_ = 0;
    std::uint64_t wrapped_ = 0;              // wrap_st calls (the streaming thread's)
    std::atomic<std::uint64_t> returned_{0}; // memories home (any thread), at most one per wrap

    std::mutex mutex_;
    std::vector<std::uint16_t> freed_;    // guarded; capacity = slots, so pushing never allocates
    std::vector<GstBuffer*> free_shells_; // guarded; capacity >= shells made
    std::vector<std::uint16_t> draining_; // the streaming thread's swap partner of freed_
};

} // namespace rdmastream::gst
