// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasrc's pads for a programme's flows after the first (rdmasend's sound
// beside its pictures): one sometimes pad "src_N" per flow N, added at the
// stream's first frame, then no-more-pads. The sender announces every
// flow's format before that frame (docs/protocol.md, "Flows"), so the pads
// are all there before a buffer goes out, as a demuxer's are; flow 0 goes
// out of the always pad "src" (basesrc's).
//
// A frame of these flows is copied into a buffer of the pad's pool and its
// slot goes back at once: an audio frame is a few kilobytes (a thousandth
// of an HD picture), and a copy keeps the video's slot accounting
// (copy-threshold) to the video. Raw audio gets the GstAudioMeta GStreamer
// requires of non-interleaved buffers; encoded flows go out as they came.
// Timestamps are the sender's, on the stream's one clock, as flow 0's.
//
// Used by the streaming thread only (create), and stop().
#pragma once

#include "rdmastream/frame.hpp"
#include "rdmastream/receiver.hpp"

#include <gst/audio/audio.h>
#include <gst/gst.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace rdmastream::gst {

class SrcFlowPads {
public:
    SrcFlowPads(GstElement* element, GstDebugCategory* category);
    SrcFlowPads(const SrcFlowPads&) = delete;
    SrcFlowPads& operator=(const SrcFlowPads&) = delete;
    ~SrcFlowPads(); // the pads leave the element

    // At the stream's first frame: a pad for every flow but 0 that the
    // sender announced (a flow whose caps rdmasrc cannot push is said once
    // in a warning and its frames go back unpushed), then no-more-pads.
    // `main` is the always pad: its stream-start's group id is theirs too.
    void add(Receiver& receiver, GstPad* main);
    bool added() const noexcept { return added_; }

    // A frame of a flow after the first: pushed on its pad, its slot given
    // back. GST_FLOW_OK also when nothing downstream links the pad or the
    // flow is not pushed; an error or a refused caps comes back as the
    // element's error (posted here).
    GstFlowReturn push(const ReceivedFrame& frame, Receiver& receiver);

    // The sender ended the stream: EOS on every pad.
    void end();

private:
    struct FlowPad;
    GstFlowReturn adopt(FlowPad& p, const StreamFormat& format);
    void refuse(std::uint8_t flow, const std::string& why);

    GstElement* element_;
    GstDebugCategory* category_;
    std::array<std::unique_ptr<FlowPad>, kMaxFlows> pads_;
    std::uint32_t group_id_ = 0;
    bool added_ = false;
    std::uint16_t refused_ = 0; // a bit per flow warned about
    GstPad* main_ = nullptr;      // "src", while allocation_probe_ is on it
    gulong allocation_probe_ = 0; // a programme's: drops ALLOCATION queries (add)
};

} // namespace rdmastream::gst
