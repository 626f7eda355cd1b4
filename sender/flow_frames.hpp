// SPDX-License-Identifier: LGPL-2.1-or-later
// One flow's frames while the transport may still read them: a table of
// entries (one per frame the flow may have out, Sender::depth), each
// keeping its frame's memory alive until on_done, and the registered
// chunks for the frames rdmasend writes itself (copies, conversions,
// audio), one per entry.
#pragma once

#include "buffer_arena.hpp"

#include "rdmastream_cli/ff_ptr.hpp"

#include "rdmastream/sender.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rdmastream::cli {

// A wait in the transport ended without the frame in hand taken: Ctrl-C
// woke it (Interrupt), or the receiver left (the sender's state() kLeft).
// The send loop ends, and tells which.
struct NotTaken {};

// A frame the transport may still be reading: the decoded picture's
// reference (in place) keeps its chunk from the decoder until on_done.
struct InFlight {
    FramePtr picture = make_frame();
    bool busy = false;
    std::uint64_t number = 0;
};

class FlowFrames {
public:
    // `fanout`: a wait that times out names the stuck receiver's effect.
    FlowFrames(Sender& tx, std::uint8_t flow, bool fanout) : tx_(tx), flow_(flow), fanout_(fanout) {}

    // Sized once the flow exists (flow 0 at connect, others after their
    // first format): on_done indexes the table.
    void size_to_depth() { entries_.resize(tx_.depth(flow_)); }
    bool sized() const noexcept { return !entries_.empty(); }
    std::size_t size() const noexcept { return entries_.size(); }

    // A free entry for the next frame: the next free one in turn, or else
    // the oldest once the transport is done with it (NotTaken on Ctrl-C or
    // when the receiver left).
    std::size_t take_entry(std::chrono::milliseconds idle);
    InFlight& entry(std::size_t i) noexcept { return entries_[i]; }
    // The cookie a send of entry `i` carries: on_done finds the flow and
    // the entry in it.
    std::uint64_t cookie(std::size_t i) const noexcept { return std::uint64_t{flow_} << 32 | i; }
    static std::uint8_t flow_of(std::uint64_t cookie) noexcept { return static_cast<std::uint8_t>(cookie >> 32); }
    // on_done: the entry's picture goes back to its decoder.
    void done(std::uint64_t cookie) noexcept;
    // Offers entry `i`'s frame (`payload` in `memory`, meta.flow this
    // flow's). Not taken (Ctrl-C, the receiver left: NotTaken; the stream
    // failed: the sender's exception): the entry is free again at once, as
    // no on_done will come for it.
    void send(std::size_t i, const FrameMemory& memory, std::span<const std::byte> payload, const FrameMeta& meta,
              std::chrono::milliseconds idle);

    // A registered chunk of at least `size` bytes for entry `i`'s frame.
    std::span<std::byte> written_chunk(std::size_t i, std::size_t size, std::chrono::milliseconds idle);
    const FrameMemory& written_memory() const noexcept { return written_arena_->memory(); }

    // Lets go of every chunk before the sender goes (its destructor's order).
    void release_arena() noexcept { written_arena_.reset(); }

private:
    void wait_done(std::uint64_t number, std::chrono::milliseconds idle);
    void wait_all_done(std::chrono::milliseconds idle);

    Sender& tx_;
    std::uint8_t flow_;
    bool fanout_;
    std::vector<InFlight> entries_;
    std::uint64_t offered_ = 0; // frames handed to the sender: the entries go round by it, as a fan-out's do
    std::shared_ptr<BufferArena> written_arena_;
};

} // namespace rdmastream::cli
