// SPDX-License-Identifier: LGPL-2.1-or-later
#include "flow_frames.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream::cli {

void FlowFrames::wait_done(std::uint64_t number, std::chrono::milliseconds idle) {
    bool done = false;
    try {
        done = tx_.wait_done(number, idle, flow_);
    } catch (const TimeoutError&) {
        if (!fanout_) throw;
        throw TimeoutError(fmt::format(
            "a receiver has held frame {} of flow {} for {} ms: it stopped taking frames (a stuck lossless receiver "
            "holds every other one back); give it --policy live, or a longer --idle-timeout",
            number, flow_, idle.count()));
    }
    if (!done) throw NotTaken{};
}

std::size_t FlowFrames::take_entry(std::chrono::milliseconds idle) {
    // The next free entry in turn, not the next in turn once it is free:
    // over two paths, a frame whose path died keeps its entry until that
    // path's retries run out (seconds), and must not hold back the entries
    // the other path has delivered since.
    const std::size_t n = entries_.size();
    for (int look = 0; look < 2; ++look) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = (offered_ + k) % n;
            if (!entries_[i].busy) return i;
        }
        if (look == 0) tx_.progress(); // deliveries not yet seen free entries
    }
    std::size_t oldest = offered_ % n; // none free: wait for the oldest
    for (std::size_t i = 0; i < n; ++i) {
        if (entries_[i].number < entries_[oldest].number) oldest = i;
    }
    wait_done(entries_[oldest].number, idle);
    return oldest;
}

void FlowFrames::wait_all_done(std::chrono::milliseconds idle) {
    for (InFlight& f : entries_) {
        if (f.busy) wait_done(f.number, idle);
    }
}

void FlowFrames::done(std::uint64_t cookie) noexcept {
    InFlight& f = entries_[static_cast<std::uint32_t>(cookie)];
    av_frame_unref(f.picture.get()); // the chunk goes back once the decoder is done with it too
    f.busy = false;
}

void FlowFrames::send(std::size_t i, const FrameMemory& memory, std::span<const std::byte> payload,
                      const FrameMeta& meta, std::chrono::milliseconds idle) {
    InFlight& f = entries_[i];
    // Not taken: no on_done will come for it, so the picture goes back
    // here, before the sender goes.
    const auto abandon = [&f] {
        av_frame_unref(f.picture.get());
        f.busy = false;
    };
    f.busy = true;
    std::optional<std::uint64_t> number;
    try {
        number = tx_.send(memory, payload, meta, cookie(i), idle);
    } catch (...) {
        abandon();
        throw;
    }
    if (!number) {
        abandon();
        throw NotTaken{};
    }
    f.number = *number;
    ++offered_;
}

std::span<std::byte> FlowFrames::written_chunk(std::size_t i, std::size_t size, std::chrono::milliseconds idle) {
    if (!written_arena_ || written_arena_->chunk_size() < size) {
        wait_all_done(idle); // no frame may still be read from the old chunks
        written_arena_.reset();
        written_arena_ = BufferArena::create(tx_.memory(), (size + 4095) / 4096 * 4096, entries_.size());
    }
    return written_arena_->chunk(i);
}

} // namespace rdmastream::cli
