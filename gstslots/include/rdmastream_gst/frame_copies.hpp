// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameCopies: what rdmasrc and rdmarecv --gst do when downstream holds too
// many ring slots: copy the frame out of its slot into a buffer of a plain
// GstBufferPool (system memory), so the slot goes back to the sender at once.
//
// The model is v4l2src (gst-plugins-good, gstv4l2bufferpool.c): when the
// driver's queue runs low (fewer buffers queued than its copy threshold) it
// pushes a copy and re-queues the driver buffer, so an element that holds
// buffers costs a copy instead of starving the capture. Here the ring's
// free slots are the driver's queue: a sender can only write a slot it holds
// a credit for, and a slot's credit goes back only when downstream lets go
// of the buffer that wraps it. Without the copy, an element that holds every
// slot (filesink batching small buffers, a queue filling up, an appsink
// pulled slowly, a muxer waiting for a keyframe) stops the stream: the
// sender waits for a credit that never comes.
//
// One object per stream, used by one thread at a time: rdmasrc's streaming
// thread, or the thread of rdmarecv's pipeline that pushes out of its
// appsrc. count() may be read from any thread; the buffers it hands out may
// be freed on any thread (GstBufferPool is).
#pragma once

#include "rdmastream_gst/frame_layout.hpp"

#include <gst/gst.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmastream::gst {

class FrameCopies {
public:
    FrameCopies() = default;
    FrameCopies(const FrameCopies&) = delete;
    FrameCopies& operator=(const FrameCopies&) = delete;
    ~FrameCopies();

    // How many of a ring's `slots` downstream may hold while `threshold`
    // stay with the sender: at least one (a threshold of `slots` or more
    // acts as slots - 1), all of them with threshold 0 (never copy).
    static std::uint32_t lendable(std::uint32_t slots, std::uint32_t threshold) noexcept {
        if (threshold == 0 || slots == 0) return slots;
        return threshold < slots ? slots - threshold : 1;
    }
    // True when a frame that just arrived should be copied: downstream holds
    // `lent` slots (this frame's not among them), and lending this one too
    // would be one more than lendable().
    static bool needed(std::uint32_t slots, std::uint32_t lent, std::uint32_t threshold) noexcept {
        return lent + 1 > lendable(slots, threshold);
    }

    // A buffer (one reference, writable) with `payload`'s bytes exactly
    // (same size, same plane offsets and strides in its GstVideoMeta, as
    // set_video_meta describes `layout`), from the pool; counted. The pool's
    // buffers are the size of the largest frame so far: raw video needs one
    // size per format; encoded frames that outgrow it get a new pool, twice
    // as large (the old one's buffers are freed as they come home). Throws
    // std::runtime_error if the pool cannot give a buffer.
    GstBuffer* copy(std::span<const std::byte> payload, const FrameLayout& layout);
    // The same for a buffer that wraps a slot already (rdmarecv --gst: the
    // frame was handed to appsrc before the pipeline took it): its bytes,
    // GstVideoMeta, timestamps, offsets and flags. The caller lets go of
    // `src` (so of its slot).
    GstBuffer* copy(GstBuffer* src);

    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
    // Pools made so far (tests: one per buffer size, not one per frame).
    std::size_t pools_made() const noexcept { return pools_made_; }

private:
    void new_pool(std::size_t size);
    GstBuffer* acquire(std::span<const std::byte> bytes); // a pooled buffer with these bytes, counted

    GstBufferPool* pool_ = nullptr;
    std::size_t size_ = 0; // of the pool's buffers
    std::atomic<std::uint64_t> count_{0};
    std::size_t pools_made_ = 0;
};

} // namespace rdmastream::gst
