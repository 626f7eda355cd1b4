// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/side_data_metas.hpp"

#include <gst/video/video.h>

#include <algorithm>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT category_ // the owner's

namespace rdmastream::gst {

namespace {

// The entry of `kind`, if the frame has one (the transport let through at
// most one of each kind, each of its kind's size).
std::optional<std::span<const std::byte>> find(std::span<const SideData> side, SideDataKind kind) noexcept {
    for (const SideData& e : side) {
        if (e.kind == kind) {
            return e.bytes;
        }
    }
    return std::nullopt;
}

template <std::size_t N>
std::optional<std::array<std::byte, N>> fixed(std::span<const SideData> side, SideDataKind kind) noexcept {
    const auto bytes = find(side, kind);
    if (!bytes || bytes->size() != N) {
        return std::nullopt;
    }
    std::array<std::byte, N> out{};
    std::copy(bytes->begin(), bytes->end(), out.begin());
    return out;
}

} // namespace

bool SrcSideData::hdr_changed(std::span<const SideData> side) const noexcept {
    return fixed<24>(side, SideDataKind::kMasteringDisplay) != mastering_ ||
           fixed<4>(side, SideDataKind::kContentLight) != light_;
}

GstCaps* SrcSideData::caps_for(GstCaps* base, std::span<const SideData> side) {
    mastering_ = fixed<24>(side, SideDataKind::kMasteringDisplay);
    light_ = fixed<4>(side, SideDataKind::kContentLight);
    fps_n_ = 0;
    fps_d_ = 1;
    if (!gst_caps_is_empty(base)) {
        gst_structure_get_fraction(gst_caps_get_structure(base, 0), "framerate", &fps_n_, &fps_d_);
    }
    if (!mastering_ && !light_) {
        return gst_caps_ref(base);
    }
    // Set over any the sender's caps had: the frame's own values win, as
    // they would for an FFmpeg sender, whose caps carry none.
    GstCaps* caps = gst_caps_copy(base);
    if (mastering_) {
        const GstVideoMasteringDisplayInfo info = decode_mastering(*mastering_);
        gst_video_mastering_display_info_add_to_caps(&info, caps);
    }
    if (light_) {
        const GstVideoContentLightLevel level = decode_content_light(*light_);
        gst_video_content_light_level_add_to_caps(&level, caps);
    }
    return caps;
}

void SrcSideData::attach(GstBuffer* buffer, std::span<const SideData> side) {
    if (const auto cc = find(side, SideDataKind::kCaptions)) {
        gst_buffer_add_video_caption_meta(buffer, GST_VIDEO_CAPTION_TYPE_CEA708_RAW,
                                          reinterpret_cast<const guint8*>(cc->data()), cc->size());
    }
    if (const auto tc = find(side, SideDataKind::kTimecode)) {
        attach_timecode(buffer, *tc);
    }
}

// The first of the entry's 12M words (the others are further timecodes of
// the same frame, e.g. a second field's, which GstVideoTimeCodeMeta has no
// room for).
void SrcSideData::attach_timecode(GstBuffer* buffer, std::span<const std::byte> words) {
    const std::uint32_t word = read_le32(words);
    const auto fps_n = static_cast<guint>(std::max(fps_n_, 0)), fps_d = static_cast<guint>(std::max(fps_d_, 1));
    bool added = false;
    if (const std::optional<Timecode> t = unpack_timecode(word, fps_n, fps_d)) {
        GstVideoTimeCode tc; // on the stack: no daily jam, so nothing to free but what clear() frees
        gst_video_time_code_init(&tc, fps_n, fps_d, nullptr,
                                 t->drop_frame ? GST_VIDEO_TIME_CODE_FLAGS_DROP_FRAME : GST_VIDEO_TIME_CODE_FLAGS_NONE,
                                 t->hours, t->minutes, t->seconds, t->frames, 0);
        // GStreamer's own rules on top of the digits' ranges: drop frame only
        // at 30000/1001 and 60000/1001, and never on a dropped frame number.
        added = gst_video_time_code_is_valid(&tc) && gst_buffer_add_video_time_code_meta(buffer, &tc) != nullptr;
        gst_video_time_code_clear(&tc);
    }
    if (!added && !warned_timecode_) {
        warned_timecode_ = true;
        GST_ELEMENT_WARNING(owner_, STREAM, DECODE, ("Left out a timecode the sender sent"),
                            ("SMPTE 12M word 0x%08x is not a valid timecode at %d/%d fps; timecodes like it are "
                             "left out",
                             word, fps_n_, fps_d_));
    }
}

void copy_side_data_metas(GstBuffer* from, GstBuffer* to) {
    gpointer state = nullptr;
    while (GstMeta* m = gst_buffer_iterate_meta_filtered(from, &state, GST_VIDEO_CAPTION_META_API_TYPE)) {
        const auto* cc = reinterpret_cast<const GstVideoCaptionMeta*>(m);
        gst_buffer_add_video_caption_meta(to, cc->caption_type, cc->data, cc->size); // copies the bytes
    }
    if (const GstVideoTimeCodeMeta* tc = gst_buffer_get_video_time_code_meta(from)) {
        gst_buffer_add_video_time_code_meta(to, &tc->tc);
    }
}

} // namespace rdmastream::gst
