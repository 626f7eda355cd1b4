// SPDX-License-Identifier: LGPL-2.1-or-later
// What a receiver (rdmasrc, rdmarecv --gst) makes of a frame's side data (ReceivedFrame::side_data):
// captions become a GstVideoCaptionMeta (CEA708_RAW) and the first timecode
// a GstVideoTimeCodeMeta on the frame's buffer; the HDR entries become the
// output caps' mastering-display-info and content-light-level fields, as
// GStreamer holds them, so the caps change only when they do.
//
// Metas are added to the buffer that wraps the slot (or its copy): the
// payload is not touched. The caption meta keeps its own copy of the
// cc_data, since the slot goes back to the sender while the meta may live on.
#pragma once

#include "rdmastream_gst/side_data_bytes.hpp"

#include "rdmastream/side_data.hpp"

#include <gst/gst.h>

#include <optional>
#include <span>

namespace rdmastream::gst {

class SrcSideData {
public:
    // `owner` posts the one-time warning about a timecode that cannot be
    // read, and logs it in `category`.
    SrcSideData(GstElement* owner, GstDebugCategory* category) noexcept : owner_(owner), category_(category) {}

    // Whether the frame's HDR entries are not what the output caps carry
    // (caps_for made them): compares bytes, allocates nothing.
    bool hdr_changed(std::span<const SideData> side) const noexcept;
    // The caps to output for frames like this one: `base` (the sender's
    // caps, as FrameLayout read them) with the frame's HDR fields set; a
    // new reference. Remembers them for hdr_changed, and the framerate the
    // timecodes count in.
    GstCaps* caps_for(GstCaps* base, std::span<const SideData> side);
    // Adds the captions and timecode of `side` to `buffer` (writable).
    void attach(GstBuffer* buffer, std::span<const SideData> side);

private:
    void attach_timecode(GstBuffer* buffer, std::span<const std::byte> words);

    GstElement* owner_;
    GstDebugCategory* category_;
    std::optional<MasteringBytes> mastering_; // what the output caps carry from side data
    std::optional<ContentLightBytes> light_;
    gint fps_n_ = 0, fps_d_ = 1; // the output caps' framerate; 0/1: none
    bool warned_timecode_ = false;
};

// The caption and timecode metas of `from` onto `to` (a copy of the frame,
// FrameCopies), so that a frame copied out of its slot keeps them.
void copy_side_data_metas(GstBuffer* from, GstBuffer* to);

} // namespace rdmastream::gst
