// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmasink_sidedata.hpp"

#include <gst/video/video.h>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT category_ // the owner's

namespace rdmastream::gst {

void SinkSideData::set_caps(GstCaps* caps) noexcept {
    GstVideoMasteringDisplayInfo mastering;
    mastering_.reset();
    if (gst_video_mastering_display_info_from_caps(&mastering, caps)) {
        mastering_ = encode_mastering(mastering);
    }
    GstVideoContentLightLevel light;
    light_.reset();
    if (gst_video_content_light_level_from_caps(&light, caps)) {
        light_ = encode_content_light(light);
    }
}

bool SinkSideData::fits(std::size_t size, std::size_t budget) const noexcept {
    return bytes_ + kSideDataEntryHead + size <= budget;
}

void SinkSideData::add(SideDataKind kind, std::span<const std::byte> bytes) noexcept {
    entries_[count_++] = SideData{kind, bytes};
    bytes_ += kSideDataEntryHead + bytes.size();
}

std::span<const SideData> SinkSideData::gather(GstBuffer* buffer, std::size_t budget) noexcept {
    count_ = 0;
    bytes_ = 0;
    // The small, fixed-size entries first: captions take what room is left.
    if (mastering_ && fits(mastering_->size(), budget)) {
        add(SideDataKind::kMasteringDisplay, *mastering_);
    }
    if (light_ && fits(light_->size(), budget)) {
        add(SideDataKind::kContentLight, *light_);
    }
    add_timecode(buffer, budget);
    add_captions(buffer, budget);
    return {entries_.data(), count_};
}

void SinkSideData::add_timecode(GstBuffer* buffer, std::size_t budget) noexcept {
    const GstVideoTimeCodeMeta* meta = gst_buffer_get_video_time_code_meta(buffer);
    if (meta == nullptr || !fits(timecode_.size(), budget)) {
        return;
    }
    const GstVideoTimeCode& tc = meta->tc;
    const Timecode t{tc.hours, tc.minutes, tc.seconds, tc.frames,
                     (tc.config.flags & GST_VIDEO_TIME_CODE_FLAGS_DROP_FRAME) != 0};
    const std::optional<std::uint32_t> word = pack_timecode(t, tc.config.fps_n, tc.config.fps_d);
    if (!word) {
        if (!warned_timecode_) {
            warned_timecode_ = true;
            GST_WARNING_OBJECT(owner_, "timecode %02u:%02u:%02u:%02u at %u/%u fps does not fit an SMPTE 12M word: "
                               "timecodes like it are not sent", tc.hours, tc.minutes, tc.seconds, tc.frames,
                               tc.config.fps_n, tc.config.fps_d);
        }
        return;
    }
    timecode_ = le32(*word);
    add(SideDataKind::kTimecode, timecode_);
}

// The first CEA-708 cc_data meta; other caption types would need a
// conversion (ccconverter does it upstream), so they are left out.
void SinkSideData::add_captions(GstBuffer* buffer, std::size_t budget) noexcept {
    gpointer state = nullptr;
    const GstVideoCaptionMeta* found = nullptr;
    GstVideoCaptionType other = GST_VIDEO_CAPTION_TYPE_UNKNOWN;
    while (GstMeta* m = gst_buffer_iterate_meta_filtered(buffer, &state, GST_VIDEO_CAPTION_META_API_TYPE)) {
        const auto* cc = reinterpret_cast<const GstVideoCaptionMeta*>(m);
        if (cc->caption_type == GST_VIDEO_CAPTION_TYPE_CEA708_RAW) {
            found = cc;
            break;
        }
        other = cc->caption_type;
    }
    if (found == nullptr) {
        if (other != GST_VIDEO_CAPTION_TYPE_UNKNOWN && !warned_caption_type_) {
            warned_caption_type_ = true;
            GST_WARNING_OBJECT(owner_, "captions of type %d are not sent: only CEA-708 cc_data (CEA708_RAW) travels; "
                               "convert them upstream (ccconverter)", static_cast<int>(other));
        }
        return;
    }
    // The transport refuses a frame whose captions are not whole triplets.
    if (found->size < 3 || found->size % 3 != 0 || !fits(found->size, budget)) {
        if (!warned_caption_size_) {
            warned_caption_size_ = true;
            GST_WARNING_OBJECT(owner_, "captions of %zu bytes are not sent: they must be whole cc_data triplets, "
                               "at most %zu bytes with the frame's other side data", found->size,
                               budget - std::min(budget, bytes_ + kSideDataEntryHead));
        }
        return;
    }
    add(SideDataKind::kCaptions, std::as_bytes(std::span(found->data, found->size)));
}

} // namespace rdmastream::gst
