// SPDX-License-Identifier: LGPL-2.1-or-later
// Where received frames go. A sink learns the programme's flows at the
// stream's first frame, sees each flow's format before the first frame of
// it, then each frame of the flows it takes while it lies in its ring slot.
#pragma once

#include "stream_layout.hpp"

#include "rdmastream/frame.hpp"

namespace rdmastream::cli {

class FrameSink {
public:
    virtual ~FrameSink() = default;
    // At the stream's first frame: the flows the sender announced before
    // it (a bit per flow id, Receiver::format), the programme a file's
    // header lists. Then start_format() for each of them the sink takes,
    // then programme_ready().
    virtual void start_programme(std::uint16_t /*flows*/) {}
    // Whether this sink takes a flow's frames, asked once, at the flow's
    // first format. Outputs that write one stream take the first flow only.
    virtual bool takes(const StreamLayout& stream) { return stream.layout.format().flow == 0; }
    // Every flow of the programme has its format: a file's header goes now.
    virtual void programme_ready() {}
    // A new format of a flow it takes (stream.layout.format().flow), read
    // and checked (read_stream_layout); every frame of that flow until the
    // next call for it is in it. `stream` outlives those frames.
    virtual void start_format(const StreamLayout& stream) = 0;
    // Handles a frame, already checked against the format's layout (its
    // payload holds every plane), so a sink reads it without checks. Returns true when the sink is done with the slot's
    // memory; false when it keeps the frame and hands the slot back later
    // (through the session's release queue).
    virtual bool consume(const ReceivedFrame& frame) = 0;
    // On the receive loop's thread, just before the session drains the
    // release queue: a sink whose freed slots collect where only this thread
    // may take them (GstSink's SlotBuffers) pushes them into the queue here.
    // Sinks that push from the freeing thread itself need nothing.
    virtual void collect_freed() {}
    // Called while the receive loop waits with frames held: throws if the
    // sink failed on another thread (e.g. a GStreamer bus error), so the
    // wait ends with the reason instead of the idle timeout.
    virtual void check() {}
    // End of stream: flush and close.
    virtual void finish() = 0;
    // Frames of `flow` the sink copied (the stats count them, per flow).
    virtual std::uint64_t copies(std::uint8_t /*flow*/) const noexcept { return 0; }
};

// --null: takes every frame and does nothing (measures the transport alone).
class NullSink final : public FrameSink {
public:
    bool takes(const StreamLayout&) override { return true; }
    void start_format(const StreamLayout&) override {}
    bool consume(const ReceivedFrame&) override { return true; }
    void finish() override {}
};

} // namespace rdmastream::cli
