// SPDX-License-Identifier: LGPL-2.1-or-later
// What rdmasink sends after each frame's payload (FrameMeta::side_data):
// the buffer's CEA-708 captions (GstVideoCaptionMeta, CEA708_RAW) and
// timecode (GstVideoTimeCodeMeta, packed to a 12M word), and the HDR fields
// of the caps (mastering-display-info, content-light-level), encoded once
// when the caps come and sent with every frame, since FFmpeg and the wire
// hold them per frame.
//
// The entries point into the buffer's metas and into this object, and the
// transport copies them at send(): nothing is allocated per frame, and the
// span is good until the next gather() or set_caps().
#pragma once

#include "rdmastream_gst/side_data_bytes.hpp"

#include "rdmastream/side_data.hpp"

#include <gst/gst.h>

#include <array>
#include <cstddef>
#include <optional>
#include <span>

namespace rdmastream::gst {

class SinkSideData {
public:
    // `owner` names the element in the log, in `category` (one warning
    // per kind of data that cannot travel).
    SinkSideData(GstObject* owner, GstDebugCategory* category) noexcept : owner_(owner), category_(category) {}

    // New caps: their HDR fields, if any, go with every frame from now on.
    void set_caps(GstCaps* caps) noexcept;
    // The side data of `buffer`, at most `budget` bytes with entry heads
    // (the format's max_side_data): what does not fit, or cannot travel, is
    // left out with a one-time warning.
    std::span<const SideData> gather(GstBuffer* buffer, std::size_t budget) noexcept;

private:
    // Room left for an entry of `size` bytes after what is gathered so far.
    bool fits(std::size_t size, std::size_t budget) const noexcept;
    void add(SideDataKind kind, std::span<const std::byte> bytes) noexcept;
    void add_captions(GstBuffer* buffer, std::size_t budget) noexcept;
    void add_timecode(GstBuffer* buffer, std::size_t budget) noexcept;

    GstObject* owner_;
    GstDebugCategory* category_;
    std::array<SideData, kMaxSideDataEntries> entries_{};
    std::size_t count_ = 0;
    std::size_t bytes_ = 0; // with entry heads
    std::array<std::byte, 4> timecode_{};
    std::optional<MasteringBytes> mastering_;
    std::optional<ContentLightBytes> light_;
    // Said once per stream (the element's state lives from start to stop).
    bool warned_caption_type_ = false, warned_caption_size_ = false, warned_timecode_ = false;
};

} // namespace rdmastream::gst
