// SPDX-License-Identifier: LGPL-2.1-or-later
// Slots that an output kept and finished with later: an encoder's worker
// pushes from its free callback, GstSink from the receive loop when its
// SlotBuffers gave the slot back (FrameSink::collect_freed). The receive
// loop, the one thread that may drive the Receiver, takes them off and
// returns the credits.
//
// Lock-free and allocation-free per frame: one counter per slot (a slot can
// come back more than once when several outputs held it) and one flag that
// says "look". push() may run on any thread and wakes the receive loop's
// wait (waker(), given to the Receiver), so a credit goes back at
// once; drain() on the receive loop's thread only.
#pragma once

#include "rdmastream/waker.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace rdmastream::cli {

class SlotReleaseQueue {
public:
    // `slots`: the first flow's slot count (it never changes, even when the
    // ring grows); `capacity`: the slot numbers every flow's may use
    // (slot_capacity), at least `slots`.
    SlotReleaseQueue(std::uint32_t slots, std::uint32_t capacity)
        : slots_(slots), capacity_(std::max(slots, capacity)),
          pending_(std::make_unique<std::atomic<std::uint32_t>[]>(capacity_)), waker_(std::make_shared<Waker>()) {}
    explicit SlotReleaseQueue(std::uint32_t slots) : SlotReleaseQueue(slots, slots) {}

    void push(std::uint16_t slot) noexcept {
        push_from_loop(slot);
        waker_->wake(); // no syscall unless the receive loop sleeps
    }
    // The same from the receive loop's own thread, which is awake: no wake,
    // so its next wait does not return at once for nothing.
    void push_from_loop(std::uint16_t slot) noexcept {
        pending_[slot].fetch_add(1, std::memory_order_release);
        any_.store(true, std::memory_order_release);
    }

    // What interrupts the receive loop's wait: a pushed slot, a freed
    // GstBuffer (GstSink), a pipeline message, Ctrl-C.
    const std::shared_ptr<Waker>& waker() const noexcept { return waker_; }

    // Calls on_slot(slot) once per push since the last drain. A push that
    // races with a drain is seen by this one or the next (the flag is set
    // after the counter, and cleared before the counters are read).
    template <typename F>
    void drain(F&& on_slot) {
        if (!any_.exchange(false, std::memory_order_acquire)) return;
        for (std::uint32_t s = 0; s < capacity_; ++s) {
            for (std::uint32_t n = pending_[s].exchange(0, std::memory_order_acquire); n > 0; --n) {
                on_slot(static_cast<std::uint16_t>(s));
            }
        }
    }

    // The first flow's slots: what a sink keeps from the sender at most.
    std::uint32_t slots() const noexcept { return slots_; }
    // Slot numbers: what tables indexed by slot are sized to.
    std::uint32_t capacity() const noexcept { return capacity_; }

private:
    std::uint32_t slots_;
    std::uint32_t capacity_;
    std::unique_ptr<std::atomic<std::uint32_t>[]> pending_;
    std::atomic<bool> any_{false};
    std::shared_ptr<Waker> waker_;
};

} // namespace rdmastream::cli
