// SPDX-License-Identifier: LGPL-2.1-or-later
// FFmpeg's frame side data to the transport's side data entries and back
// (av_side_data.hpp; the byte forms are docs/protocol.md's "Side data").
#include "rdmastream_cli/av_side_data.hpp"

#include <cmath>
#include <cstring>
#include <new>
#include <cstdint>
#include <cstdio>

extern "C" {
#include <libavutil/mastering_display_metadata.h>
}

namespace rdmastream::cli {

namespace {

void put_le16(std::span<std::byte> out, std::size_t at, std::uint32_t v) {
    out[at] = static_cast<std::byte>(v & 0xff);
    out[at + 1] = static_cast<std::byte>((v >> 8) & 0xff);
}

void put_le32(std::span<std::byte> out, std::size_t at, std::uint32_t v) {
    put_le16(out, at, v & 0xffff);
    put_le16(out, at + 2, v >> 16);
}

// A rational in units of 1/scale, as ST 2086 counts (0.00002 for
// chromaticity, 0.0001 cd/m² for luminance): exact for what FFmpeg's
// decoders export (denominators of 50000 and 10000); clamped to the field.
std::uint32_t le16(std::span<const std::byte> in, std::size_t at) {
    return std::to_integer<std::uint32_t>(in[at]) | std::to_integer<std::uint32_t>(in[at + 1]) << 8;
}

std::uint32_t le32(std::span<const std::byte> in, std::size_t at) {
    return le16(in, at) | le16(in, at + 2) << 16;
}

AVFrameSideData* add(AVFrame* frame, AVFrameSideDataType type, std::size_t size) {
    AVFrameSideData* sd = av_frame_new_side_data(frame, type, size);
    if (sd == nullptr) throw std::bad_alloc();
    return sd;
}

std::uint32_t units(AVRational q, double scale, std::uint32_t most) {
    if (q.den == 0 || q.num < 0) return 0;
    const double v = std::nearbyint(static_cast<double>(q.num) * scale / q.den);
    return v >= most ? most : static_cast<std::uint32_t>(v);
}

} // namespace

void AvSideData::warn_once(SideDataKind kind, const char* why) {
    const unsigned bit = 1u << static_cast<unsigned>(kind);
    if ((warned_ & bit) != 0) return;
    warned_ |= bit;
    std::fprintf(stderr, "rdmasend: warning: the input's %s %s: not sent (this warning comes once)\n", name(kind),
                 why);
}

std::span<const SideData> AvSideData::of(const AVFrame& picture) {
    std::size_t n = 0;
    if (const AVFrameSideData* cc = av_frame_get_side_data(&picture, AV_FRAME_DATA_A53_CC)) {
        // The others take at most 56 bytes of the room the format declares.
        if (cc->size == 0 || cc->size % 3 != 0 || cc->size > kDefaultSideDataBytes - 64) {
            warn_once(SideDataKind::kCaptions, "are not whole cc_data triplets, or over 4032 bytes a frame");
        } else {
            entries_[n++] = {SideDataKind::kCaptions,
                             std::span(reinterpret_cast<const std::byte*>(cc->data), cc->size)};
        }
    }
    if (const AVFrameSideData* tc = av_frame_get_side_data(&picture, AV_FRAME_DATA_S12M_TIMECODE)) {
        // uint32_t[4]: the count, then up to three packed timecodes, host order.
        const auto* words = reinterpret_cast<const std::uint32_t*>(tc->data);
        const std::size_t count = tc->size >= 4 ? words[0] : 0;
        if (count < 1 || count > 3 || tc->size < 4 * (count + 1)) {
            warn_once(SideDataKind::kTimecode, "has a count outside 1..3");
        } else {
            for (std::size_t i = 0; i < count; ++i) put_le32(timecode_, 4 * i, words[i + 1]);
            entries_[n++] = {SideDataKind::kTimecode, std::span<const std::byte>(timecode_).first(4 * count)};
        }
    }
    if (const AVFrameSideData* md = av_frame_get_side_data(&picture, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA)) {
        const auto& m = *reinterpret_cast<const AVMasteringDisplayMetadata*>(md->data);
        if (!m.has_primaries || !m.has_luminance) {
            warn_once(SideDataKind::kMasteringDisplay, "lacks its primaries or its luminance");
        } else {
            for (std::size_t c = 0; c < 3; ++c) { // r, g, b as FFmpeg and GStreamer order them
                put_le16(mastering_, 4 * c, units(m.display_primaries[c][0], 50000, 0xffff));
                put_le16(mastering_, 4 * c + 2, units(m.display_primaries[c][1], 50000, 0xffff));
            }
            put_le16(mastering_, 12, units(m.white_point[0], 50000, 0xffff));
            put_le16(mastering_, 14, units(m.white_point[1], 50000, 0xffff));
            put_le32(mastering_, 16, units(m.max_luminance, 10000, 0xffffffffu));
            put_le32(mastering_, 20, units(m.min_luminance, 10000, 0xffffffffu));
            entries_[n++] = {SideDataKind::kMasteringDisplay, mastering_};
        }
    }
    if (const AVFrameSideData* cl = av_frame_get_side_data(&picture, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL)) {
        const auto& l = *reinterpret_cast<const AVContentLightMetadata*>(cl->data);
        put_le16(light_, 0, l.MaxCLL > 0xffff ? 0xffff : l.MaxCLL);
        put_le16(light_, 2, l.MaxFALL > 0xffff ? 0xffff : l.MaxFALL);
        entries_[n++] = {SideDataKind::kContentLight, light_};
    }
    return std::span<const SideData>(entries_.data(), n);
}

void AvSideData::attach(std::span<const SideData> entries, AVFrame* frame) {
    for (const SideData& e : entries) {
        switch (e.kind) {
        case SideDataKind::kCaptions:
            std::memcpy(add(frame, AV_FRAME_DATA_A53_CC, e.bytes.size())->data, e.bytes.data(), e.bytes.size());
            break;
        case SideDataKind::kTimecode: { // the count, then the words, host order
            std::uint32_t words[4] = {static_cast<std::uint32_t>(e.bytes.size() / 4), 0, 0, 0};
            for (std::size_t i = 0; i < words[0]; ++i) words[i + 1] = le32(e.bytes, 4 * i);
            std::memcpy(add(frame, AV_FRAME_DATA_S12M_TIMECODE, sizeof words)->data, words, sizeof words);
            break;
        }
        case SideDataKind::kMasteringDisplay: {
            AVMasteringDisplayMetadata* m = av_mastering_display_metadata_create_side_data(frame);
            if (m == nullptr) throw std::bad_alloc();
            for (std::size_t c = 0; c < 3; ++c) {
                m->display_primaries[c][0] = av_make_q(static_cast<int>(le16(e.bytes, 4 * c)), 50000);
                m->display_primaries[c][1] = av_make_q(static_cast<int>(le16(e.bytes, 4 * c + 2)), 50000);
            }
            m->white_point[0] = av_make_q(static_cast<int>(le16(e.bytes, 12)), 50000);
            m->white_point[1] = av_make_q(static_cast<int>(le16(e.bytes, 14)), 50000);
            // u32 in 0.0001 cd/m²: as an int rational, clamped (10^5 cd/m² and more is not a display).
            const auto lum = [&](std::size_t at) {
                const std::uint32_t v = le32(e.bytes, at);
                return av_make_q(v > 0x7fffffffu ? 0x7fffffff : static_cast<int>(v), 10000);
            };
            m->max_luminance = lum(16);
            m->min_luminance = lum(20);
            m->has_primaries = 1;
            m->has_luminance = 1;
            break;
        }
        case SideDataKind::kContentLight: {
            AVContentLightMetadata* l = av_content_light_metadata_create_side_data(frame);
            if (l == nullptr) throw std::bad_alloc();
            l->MaxCLL = le16(e.bytes, 0);
            l->MaxFALL = le16(e.bytes, 2);
            break;
        }
        }
    }
}

} // namespace rdmastream::cli
