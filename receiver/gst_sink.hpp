// SPDX-License-Identifier: LGPL-2.1-or-later
// --gst "PIPELINE": frames into a GStreamer pipeline, `appsrc ! PIPELINE`,
// without a copy and, once every slot has carried a frame, without an
// allocation: each frame goes out in a GstBuffer from SlotBuffers
// (gstslots/, rdmasrc's too) that wraps its ring slot, with a GstVideoMeta
// for the sender's plane offsets and strides. When GStreamer lets go of the
// slot's memory, on whichever thread, SlotBuffers only queues the slot;
// collect_freed, on the receive loop, moves it to the session's release
// queue, which returns the credit (the transport has one driving thread).
//
// When the pipeline holds so many slots that fewer than the copy threshold
// would stay with the sender (a queue filling up, filesink batching small
// buffers, an appsink pulled slowly), a frame is copied out instead, into
// a buffer of a plain pool (FrameCopies, gstslots/: v4l2src's rule), and
// its slot goes back at once: a holding element costs copies (counted:
// copies(0)), never a stall. The choice is made as the frame leaves appsrc
// for the pipeline (copy_if_held), as rdmasrc makes it as it pushes: frames
// still waiting in appsrc's queue are a pipeline that is slow, not one that
// holds, and they keep their slots, so a slow pipeline still slows the
// sender down (credits) instead of filling memory with copies.
//
// A programme's other flows (rdmasend's sound) go to appsrcs the pipeline
// names: an element reference `flowN.` in PIPELINE (e.g. "videoconvert !
// autovideosink flow1. ! audioconvert ! autoaudiosink") makes an appsrc
// named flowN for flow N; a flow without one goes to no output (said
// once). Their frames are copied into buffers of a pool per flow (an audio
// frame is a few kilobytes; the pictures keep the slots), raw audio with a
// GstAudioMeta when planar, and share flow 0's time origin: what was
// simultaneous at the sender is simultaneous in the pipeline.
//
// The caps are the sender's own (they are GStreamer caps): raw video, or,
// for the first flow, interleaved raw audio (planar audio needs a
// GstAudioMeta per buffer, which the slot buffers do not carry: refused at
// its format). Each buffer is
// stamped as rdmasrc stamps its own (stamp_frame_buffer, gstslots/): the
// sender's flags (DISCONT, DELTA_UNIT, HEADER, CORRUPTED), its frame number
// as the offset, and its timestamps, here shifted so the first frame is at
// 0: the pipeline is not live and plays at the stream's pace from the first
// frame (add sync=false to the sink to take frames as they come). End of
// stream waits for the pipeline's EOS; a pipeline error ends the stream
// with its message.
#pragma once

#include "frame_sink.hpp"
#include "gst_ptr.hpp"
#include "slot_release_queue.hpp"

#include "rdmastream_gst/frame_copies.hpp"
#include "rdmastream_gst/side_data_metas.hpp"
#include "rdmastream_gst/slot_buffers.hpp"

#include <gst/audio/audio.h>
#include <gst/video/video.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream::cli {

// Slots --gst keeps out of the pipeline's hands by default (rdmasrc's
// copy-threshold, the same default and reason).
inline constexpr std::uint32_t kDefaultCopyThreshold = 2;

class GstSink final : public FrameSink {
public:
    // Builds and starts the pipeline now: a bad description or an element
    // that cannot start fails before any connection. `copy_threshold`:
    // see above; 0 never copies.
    GstSink(const std::string& pipeline, SlotReleaseQueue& released,
            std::uint32_t copy_threshold = kDefaultCopyThreshold);
    ~GstSink() override;
    void start_programme(std::uint16_t flows) override;
    bool takes(const StreamLayout& stream) override;
    void start_format(const StreamLayout& stream) override;
    bool consume(const ReceivedFrame& frame) override; // gst_sink_push.cpp
    void collect_freed() override;                     // gst_sink_push.cpp
    void check() override { check_bus(); }
    void finish() override;
    std::uint64_t copies(std::uint8_t flow) const noexcept override { // any thread; it takes flow 0 alone
        return flow == 0 ? frame_copies_.count() : 0;
    }

    // The recycled buffers, for their allocation counts (tests). Receive
    // loop's thread.
    const gst::SlotBuffers& slot_buffers() const noexcept { return buffers_; }
    // The pipeline, to look into its elements (tests).
    GstElement* pipeline() const noexcept { return pipeline_.get(); }

private:
    // On the rdmastats element's sink pad, in the streaming thread just
    // before the element draws: sets the text of the frame it is about to
    // draw (setting it at push time would label a queued frame with the
    // newest frame's text).
    static GstPadProbeReturn label_frame(GstPad* pad, GstPadProbeInfo* info, gpointer self);
    // On appsrc's src pad, in the pipeline's thread, as each frame leaves
    // appsrc: swaps it for a copy when lending its slot too would leave the
    // sender fewer than the copy threshold (gst_sink_push.cpp).
    static GstPadProbeReturn copy_if_held(GstPad* pad, GstPadProbeInfo* info, gpointer self);
    // A frame of a flow after the first: copied into a pooled buffer,
    // pushed into its appsrc (gst_sink_push.cpp).
    bool consume_flow(const ReceivedFrame& frame);
    // Throws on an error message waiting on the bus (never blocks).
    void check_bus();
    [[noreturn]] void throw_error(GstMessage* error, bool at_start) const;

    std::string description_;
    SlotReleaseQueue& released_;
    // Declared before the pipeline, so it goes after it. It does not own
    // the ring: run_receive destroys the outputs before the receiver, and
    // ~GstSink's NULL state frees every buffer still in the pipeline first.
    gst::SlotBuffers buffers_;
    // After buffers_ for the same reason; its copies may outlive it (the pool
    // frees them as they come home). Used by copy_if_held only, in the
    // pipeline's thread, as are the two below it.
    gst::FrameCopies frame_copies_;
    std::uint32_t copy_threshold_;
    std::uint64_t passed_ = 0;  // frames that left appsrc: those not home yet are the pipeline's
    bool told_copying_ = false; // the one line that says copying started
    GstElementPtr pipeline_;
    GstElementPtr appsrc_;
    GstElementPtr stats_; // the `rdmastats` element if it has a "text" property
    GstBusPtr bus_;

    // A flow after the first: its appsrc (if the pipeline names one), its
    // current format, the pool its frames are copied into.
    struct FlowSrc {
        GstElementPtr appsrc;
        const StreamLayout* stream = nullptr;
        std::optional<GstAudioInfo> audio; // raw audio: its sample layout
        GstBufferPoolPtr pool;
    };
    std::array<FlowSrc, kMaxFlows> flows_;

    const StreamLayout* stream_ = nullptr; // the current format's
    // Captions and timecode as metas, HDR metadata in the caps, as rdmasrc
    // does (gstslots/side_data_metas.hpp); made once appsrc_ is there.
    std::optional<gst::SrcSideData> side_data_;
    // The first frame's pts, of whichever flow, which the pipeline sees as
    // 0 (see above); none until a frame had one.
    GstClockTime origin_ = GST_CLOCK_TIME_NONE;
    // Overlay text per slot, written when the slot's frame is pushed, read by
    // label_frame; `sequence` is published last (release) and names the
    // frame the text belongs to. A slot is rewritten only after its previous
    // buffer was freed, i.e. after that frame was labelled.
    struct SlotText {
        std::atomic<std::uint64_t> sequence{UINT64_MAX};
        std::array<char, 128> text{};
    };
    std::vector<SlotText> texts_;
};

} // namespace rdmastream::cli
