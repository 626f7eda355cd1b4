// SPDX-License-Identifier: LGPL-2.1-or-later
// FFmpeg's frame side data through the transport's byte forms and back
// (rdmastream_cli/av_side_data.hpp, wire/side_data_wire.hpp): what rdmasend
// reads off a decoded picture is what rdmarecv attaches to the frame it
// encodes, field for field.
#include "rdmastream_cli/av_side_data.hpp"
#include "wire/side_data_wire.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

extern "C" {
#include <libavutil/mastering_display_metadata.h>
}

namespace {

using rdmastream::SideData;
using rdmastream::cli::AvSideData;

struct FrameFree {
    void operator()(AVFrame* f) const { av_frame_free(&f); }
};
using Frame = std::unique_ptr<AVFrame, FrameFree>;

TEST(AvSideData, EveryKindSurvivesTheWire) {
    Frame in(av_frame_alloc());
    const unsigned char cc[] = {0xfc, 0x94, 0x2c, 0xfd, 0x80, 0x80};
    std::memcpy(av_frame_new_side_data(in.get(), AV_FRAME_DATA_A53_CC, sizeof cc)->data, cc, sizeof cc);
    const std::uint32_t tc[4] = {2, 0x01234567, 0x01234568, 0};
    std::memcpy(av_frame_new_side_data(in.get(), AV_FRAME_DATA_S12M_TIMECODE, sizeof tc)->data, tc, sizeof tc);
    AVMasteringDisplayMetadata* md = av_mastering_display_metadata_create_side_data(in.get());
    const int xy[3][2] = {{34000, 16000}, {13250, 34500}, {7500, 3000}}; // BT.2020 r, g, b
    for (int c = 0; c < 3; ++c) {
        md->display_primaries[c][0] = av_make_q(xy[c][0], 50000);
        md->display_primaries[c][1] = av_make_q(xy[c][1], 50000);
    }
    md->white_point[0] = av_make_q(15635, 50000);
    md->white_point[1] = av_make_q(16450, 50000);
    md->max_luminance = av_make_q(10000000, 10000);
    md->min_luminance = av_make_q(1, 10000);
    md->has_primaries = md->has_luminance = 1;
    AVContentLightMetadata* cll = av_content_light_metadata_create_side_data(in.get());
    cll->MaxCLL = 1000;
    cll->MaxFALL = 400;

    AvSideData reader;
    const auto entries = reader.of(*in);
    ASSERT_EQ(entries.size(), 4u);
    // Over the wire: encoded as a sender writes it, decoded as a receiver checks it.
    std::vector<std::byte> block(rdmastream::wire::side_data_size(entries));
    rdmastream::wire::encode_side_data(entries, block);
    std::array<SideData, rdmastream::kMaxSideDataEntries> got{};
    const std::size_t n = rdmastream::wire::decode_side_data(block, 0, got);
    ASSERT_EQ(n, 4u);

    Frame out(av_frame_alloc());
    AvSideData::attach(std::span<const SideData>(got.data(), n), out.get());
    const AVFrameSideData* occ = av_frame_get_side_data(out.get(), AV_FRAME_DATA_A53_CC);
    ASSERT_NE(occ, nullptr);
    EXPECT_EQ(std::vector<unsigned char>(occ->data, occ->data + occ->size), std::vector<unsigned char>(cc, cc + 6));
    const AVFrameSideData* otc = av_frame_get_side_data(out.get(), AV_FRAME_DATA_S12M_TIMECODE);
    ASSERT_NE(otc, nullptr);
    ASSERT_EQ(otc->size, sizeof tc);
    EXPECT_EQ(std::memcmp(otc->data, tc, sizeof tc), 0);
    const auto* omd = reinterpret_cast<const AVMasteringDisplayMetadata*>(
        av_frame_get_side_data(out.get(), AV_FRAME_DATA_MASTERING_DISPLAY_METADATA)->data);
    for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(av_cmp_q(omd->display_primaries[c][0], md->display_primaries[c][0]), 0) << c;
        EXPECT_EQ(av_cmp_q(omd->display_primaries[c][1], md->display_primaries[c][1]), 0) << c;
    }
    EXPECT_EQ(av_cmp_q(omd->white_point[0], md->white_point[0]), 0);
    EXPECT_EQ(av_cmp_q(omd->white_point[1], md->white_point[1]), 0);
    EXPECT_EQ(av_cmp_q(omd->max_luminance, md->max_luminance), 0);
    EXPECT_EQ(av_cmp_q(omd->min_luminance, md->min_luminance), 0);
    EXPECT_TRUE(omd->has_primaries && omd->has_luminance);
    const auto* ocll = reinterpret_cast<const AVContentLightMetadata*>(
        av_frame_get_side_data(out.get(), AV_FRAME_DATA_CONTENT_LIGHT_LEVEL)->data);
    EXPECT_EQ(ocll->MaxCLL, 1000u);
    EXPECT_EQ(ocll->MaxFALL, 400u);
}

// What the transport would refuse is left out, not sent to fail the stream.
TEST(AvSideData, LeavesOutWhatTheTransportRefuses) {
    Frame in(av_frame_alloc());
    av_frame_new_side_data(in.get(), AV_FRAME_DATA_A53_CC, 4); // not whole triplets
    const std::uint32_t tc[4] = {0, 0, 0, 0};                  // no timecode in it
    std::memcpy(av_frame_new_side_data(in.get(), AV_FRAME_DATA_S12M_TIMECODE, sizeof tc)->data, tc, sizeof tc);
    AVMasteringDisplayMetadata* md = av_mastering_display_metadata_create_side_data(in.get());
    md->has_primaries = 1; // no luminance
    AvSideData reader;
    EXPECT_TRUE(reader.of(*in).empty());
}

} // namespace
