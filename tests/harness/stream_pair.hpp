// SPDX-License-Identifier: LGPL-2.1-or-later
// A FrameReceiver and a FrameSender joined by a MemoryFabric: what
// connect/accept make over rdma_cm, minus the handshake (the receiver's ring
// advert is handed to the sender directly).
#pragma once

#include "memory_fabric.hpp"

#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"

#include <memory>

namespace rdmastream::harness {

// Slots of 4 KiB payload: what most harness tests stream.
inline constexpr std::uint32_t kSlot = 4096 + wire::kSlotHeaderSize;

inline RingConfig ring(std::uint32_t slots, PollMode mode = PollMode::kEvent) {
    RingConfig r;
    r.slots = slots;
    r.slot_size = kSlot;
    r.poll_mode = mode;
    return r;
}

struct StreamPair {
    MemoryFabric fabric;
    std::unique_ptr<FrameReceiver> rx; // end 0
    std::unique_ptr<FrameSender> tx;   // end 1; declared last: goes first
};

inline StreamPair connect_pair(const RingConfig& ring, const SenderOptions& opts) {
    StreamPair p;
    p.rx = std::make_unique<FrameReceiver>(p.fabric.end(0, ring.poll_mode, ring.waker.get()), ring);
    p.tx = std::make_unique<FrameSender>(p.fabric.end(1, opts.poll_mode, opts.waker.get()), p.rx->ring_advert(), opts);
    return p;
}

} // namespace rdmastream::harness
