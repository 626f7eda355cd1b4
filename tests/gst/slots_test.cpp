// SPDX-License-Identifier: LGPL-2.1-or-later
// SlotBuffers (the recycled buffers of rdmasrc and rdmarecv --gst) on a
// plain array standing in for the ring: a slot is freed exactly when the
// last reference to its memory goes, shells and memories are re-used, and
// the ring outlives every buffer.
#include "rdmastream_gst/frame_copies.hpp"
#include "rdmastream_gst/slot_buffers.hpp"
#include "rdmastream_gst/video_meta.hpp"

#include "gst_test_env.hpp"

#include "wire/wire.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

using namespace rdmastream::gst;

namespace {

constexpr std::uint32_t kSlots = 4;
constexpr std::size_t kRoom = 1024;

class SlotBuffersTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        init_gstreamer_for_tests();
        // A g_return_if_fail in GStreamer (a memory resized while shared, a
        // buffer changed while not writable) must fail the test.
        g_log_set_always_fatal(static_cast<GLogLevelFlags>(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING));
    }
    void SetUp() override {
        auto* ring = new std::vector<std::byte>(kSlots * kRoom);
        data_ = ring->data();
        // The deleter tells when the last buffer let the ring go.
        buffers_ = std::make_unique<SlotBuffers>(kSlots, std::shared_ptr<void>(ring, [this](void* r) {
                                                     delete static_cast<std::vector<std::byte>*>(r);
                                                     ring_gone_ = true;
                                                 }));
    }
    void TearDown() override {
        buffers_.reset();
        EXPECT_TRUE(ring_gone_);
    }
    GstBuffer* frame(std::uint16_t slot, std::size_t size = 100) {
        return buffers_->wrap_st(slot, {data_ + slot * kRoom, size}, kRoom);
    }
    std::vector<std::uint16_t> freed() {
        const auto s = buffers_->take_freed_st();
        return {s.begin(), s.end()};
    }

    std::byte* data_ = nullptr;
    std::unique_ptr<SlotBuffers> buffers_;
    bool ring_gone_ = false;
};

} // namespace

// The buffer is the slot: read and written in place (an in-place element
// such as textoverlay draws into the slot instead of copying the frame).
TEST_F(SlotBuffersTest, WrapsTheSlotWritableWithoutCopying) {
    GstBuffer* b = frame(2, 300);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READWRITE));
    EXPECT_EQ(map.data, reinterpret_cast<guint8*>(data_ + 2 * kRoom));
    EXPECT_EQ(map.size, 300u);
    map.data[0] = 0x5a;
    gst_buffer_unmap(b, &map);
    EXPECT_EQ(data_[2 * kRoom], std::byte{0x5a});
    EXPECT_FALSE(GST_MEMORY_IS_READONLY(gst_buffer_peek_memory(b, 0)));
    gst_buffer_unref(b);
}

TEST_F(SlotBuffersTest, FreeingTheBufferFreesItsSlot) {
    GstBuffer* b = frame(1);
    EXPECT_TRUE(freed().empty());
    gst_buffer_unref(b);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{1});
    EXPECT_TRUE(freed().empty()); // each release is reported once
}

TEST_F(SlotBuffersTest, SteadyStateAllocatesNothing) {
    GstBuffer* first = nullptr;
    for (int i = 0; i < 100; ++i) {
        const auto slot = static_cast<std::uint16_t>(i % kSlots);
        GstBuffer* b = frame(slot, 10 + static_cast<std::size_t>(i)); // sizes vary per frame
        EXPECT_EQ(gst_buffer_get_size(b), 10u + static_cast<std::size_t>(i));
        if (first == nullptr) {
            first = b;
        }
        EXPECT_EQ(b, first); // the same shell every time
        gst_buffer_unref(b);
        EXPECT_EQ(freed(), std::vector<std::uint16_t>{slot});
    }
    EXPECT_EQ(buffers_->shells_made(), 1u);
    EXPECT_EQ(buffers_->memories_made(), kSlots);
}

TEST_F(SlotBuffersTest, ACopyDownstreamKeepsTheSlotBusy) {
    GstBuffer* b = frame(0);
    GstBuffer* copy = gst_buffer_copy(b); // shares the memory
    GstBuffer* part = gst_buffer_copy_region(b, GST_BUFFER_COPY_ALL, 10, 20);
    gst_buffer_unref(b);
    EXPECT_TRUE(freed().empty());
    gst_buffer_unref(copy);
    EXPECT_TRUE(freed().empty());
    gst_buffer_unref(part);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{0});
}

TEST_F(SlotBuffersTest, DownstreamSwappingTheMemoryFreesTheSlotAndKeepsTheShell) {
    GstBuffer* b = frame(3);
    gst_buffer_replace_all_memory(b, gst_allocator_alloc(nullptr, 16, nullptr));
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{3});
    GstBuffer* next = frame(3); // the slot's next frame while downstream holds the old shell
    EXPECT_NE(next, b);
    gst_buffer_unref(b);
    gst_buffer_unref(next);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{3});
    EXPECT_EQ(buffers_->shells_made(), 2u);
    EXPECT_EQ(buffers_->memories_made(), 1u);
}

TEST_F(SlotBuffersTest, ARecycledBufferStartsClean) {
    GstBuffer* b = frame(0);
    gsize offset[GST_VIDEO_MAX_PLANES] = {};
    gint stride[GST_VIDEO_MAX_PLANES] = {8};
    GstVideoMeta* ours =
        gst_buffer_add_video_meta_full(b, GST_VIDEO_FRAME_FLAG_NONE, GST_VIDEO_FORMAT_GRAY8, 8, 8, 1, offset, stride);
    gst_buffer_add_video_crop_meta(b); // downstream's
    GST_BUFFER_PTS(b) = 42;
    GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DISCONT);
    gst_buffer_unref(b);
    GstBuffer* again = frame(1);
    ASSERT_EQ(again, b);
    EXPECT_EQ(GST_BUFFER_PTS(again), GST_CLOCK_TIME_NONE);
    EXPECT_FALSE(GST_BUFFER_FLAG_IS_SET(again, GST_BUFFER_FLAG_DISCONT));
    EXPECT_EQ(gst_buffer_get_video_crop_meta(again), nullptr);
    EXPECT_EQ(gst_buffer_get_video_meta(again), ours); // kept, for rdmasrc to rewrite
    EXPECT_EQ(gst_buffer_n_memory(again), 1u);
    gst_buffer_unref(again);
}

// A meta downstream locked is not ours to remove: that shell is freed, not
// re-used, and a new one carries the next frame.
TEST_F(SlotBuffersTest, AShellWithALockedMetaIsNotReused) {
    GstBuffer* b = frame(0);
    GstMeta* locked = reinterpret_cast<GstMeta*>(gst_buffer_add_video_crop_meta(b));
    locked->flags = static_cast<GstMetaFlags>(locked->flags | GST_META_FLAG_LOCKED);
    gst_buffer_unref(b);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{0}); // the slot comes home all the same
    GstBuffer* next = frame(1);
    EXPECT_EQ(gst_buffer_get_video_crop_meta(next), nullptr);
    gst_buffer_unref(next);
    EXPECT_EQ(buffers_->shells_made(), 2u);
    GstBuffer* again = frame(2);
    EXPECT_EQ(again, next); // the new shell is re-used as any other
    gst_buffer_unref(again);
    EXPECT_EQ(buffers_->shells_made(), 2u);
}

TEST_F(SlotBuffersTest, ANewRingGetsNewWrappers) {
    gst_buffer_unref(frame(0));
    freed();
    // The ring grew: same slot, new address, more room.
    std::vector<std::byte> bigger(kSlots * kRoom * 2);
    GstBuffer* b = buffers_->wrap_st(0, {bigger.data(), 1500}, 2 * kRoom);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
    EXPECT_EQ(map.data, reinterpret_cast<guint8*>(bigger.data()));
    EXPECT_EQ(map.size, 1500u);
    gst_buffer_unmap(b, &map);
    gst_buffer_unref(b);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{0});
    EXPECT_EQ(buffers_->memories_made(), 2u);
}

TEST_F(SlotBuffersTest, TheRingOutlivesTheOwnerWhileBuffersAreDownstream) {
    GstBuffer* a = frame(0);
    GstBuffer* b = frame(1);
    GstBuffer* copy = gst_buffer_copy(b);
    buffers_.reset(); // rdmasrc stopped
    gst_buffer_unref(a);
    gst_buffer_unref(b);
    EXPECT_FALSE(ring_gone_);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(copy, &map, GST_MAP_READ)); // still points into the ring
    gst_buffer_unmap(copy, &map);
    gst_buffer_unref(copy);
    EXPECT_TRUE(ring_gone_);
}

// What FrameCopies::needed decides by: the slots downstream holds now.
TEST_F(SlotBuffersTest, CountsTheSlotsDownstreamHolds) {
    GstBuffer* a = frame(0);
    GstBuffer* b = frame(1);
    EXPECT_EQ(buffers_->lent_st(), 2u);
    GstBuffer* copy = gst_buffer_copy(a); // shares a's memory: slot 0 stays lent
    gst_buffer_unref(a);
    gst_buffer_unref(b);
    EXPECT_EQ(buffers_->lent_st(), 1u); // b's slot is home, before the owner takes it back
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{1});
    EXPECT_EQ(buffers_->lent_st(), 1u);
    gst_buffer_unref(copy);
    EXPECT_EQ(buffers_->lent_st(), 0u);
    EXPECT_EQ(freed(), std::vector<std::uint16_t>{0});
}

// v4l2src's rule: copy once lending the frame's slot would leave fewer than
// the threshold to the sender; at least one slot is always lent; 0 never copies.
TEST(FrameCopiesRule, KeepsThresholdSlotsForTheSender) {
    // 8 slots, keep 2: downstream may hold 6; the frame that would be its 7th is copied.
    EXPECT_EQ(FrameCopies::lendable(8, 2), 6u);
    EXPECT_FALSE(FrameCopies::needed(8, 0, 2));
    EXPECT_FALSE(FrameCopies::needed(8, 5, 2));
    EXPECT_TRUE(FrameCopies::needed(8, 6, 2));
    EXPECT_TRUE(FrameCopies::needed(8, 7, 2));
    // A threshold of the ring's size or more still lends one slot.
    EXPECT_EQ(FrameCopies::lendable(2, 2), 1u);
    EXPECT_EQ(FrameCopies::lendable(4, 100), 1u);
    EXPECT_FALSE(FrameCopies::needed(2, 0, 2));
    EXPECT_TRUE(FrameCopies::needed(2, 1, 2));
    // 0: never copy, whatever downstream holds.
    EXPECT_EQ(FrameCopies::lendable(8, 0), 8u);
    EXPECT_FALSE(FrameCopies::needed(8, 7, 0));
}

namespace {

// I420 8x4 in the sender's padded layout: stride 16, gaps between planes.
FrameLayout padded_i420() {
    rdmastream::wire::StreamFormat f;
    f.id = 1;
    f.caps = "video/x-raw,format=I420,width=8,height=4,framerate=25/1";
    f.plane_count = 3;
    f.planes[0] = {4, 16};
    f.planes[1] = {4 + 16 * 4 + 8, 8};
    f.planes[2] = {4 + 16 * 4 + 8 + 8 * 2 + 4, 8};
    f.max_frame_size = f.planes[2].offset + 8 * 2;
    return FrameLayout::check(f, "the test");
}

FrameLayout opaque() {
    rdmastream::wire::StreamFormat f;
    f.id = 2;
    f.caps = "video/mpeg,mpegversion=4,systemstream=false";
    f.max_frame_size = 1 << 20;
    return FrameLayout::check(f, "the test");
}

std::vector<std::byte> pattern(std::size_t size, int seed) {
    std::vector<std::byte> p(size);
    for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::byte>((i * 13 + static_cast<std::size_t>(seed)) & 0xff);
    return p;
}

class FrameCopiesTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        init_gstreamer_for_tests();
        g_log_set_always_fatal(static_cast<GLogLevelFlags>(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING));
    }
};

} // namespace

// The copy is the frame, bit for bit, with the sender's plane offsets and
// strides, in memory of its own (pointer identity: not the slot), so the
// slot can go back at once.
TEST_F(FrameCopiesTest, CopiesTheFrameBitExactIntoMemoryOfItsOwn) {
    const FrameLayout layout = padded_i420();
    const auto slot = pattern(layout.format().max_frame_size, 1);
    FrameCopies copies;
    GstBuffer* b = copies.copy(slot, layout);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READWRITE)); // writable: downstream's own
    EXPECT_NE(map.data, reinterpret_cast<const guint8*>(slot.data()));
    ASSERT_EQ(map.size, slot.size());
    EXPECT_TRUE(std::equal(slot.begin(), slot.end(), reinterpret_cast<const std::byte*>(map.data)));
    gst_buffer_unmap(b, &map);
    const GstVideoMeta* meta = gst_buffer_get_video_meta(b);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(meta->n_planes, 3u);
    for (guint i = 0; i < 3; ++i) {
        EXPECT_EQ(meta->offset[i], layout.plane(i).offset) << i;
        EXPECT_EQ(static_cast<std::uint32_t>(meta->stride[i]), layout.plane(i).stride) << i;
    }
    EXPECT_EQ(copies.count(), 1u);
    gst_buffer_unref(b);
}

// From a pool: a copy that came home is the next one, meta and all; frames
// of varying size (encoded) fit the same pool until one outgrows it.
TEST_F(FrameCopiesTest, RecyclesItsBuffersAndGrowsForLargerFrames) {
    const FrameLayout raw = padded_i420();
    FrameCopies copies;
    GstBuffer* first = copies.copy(pattern(raw.format().max_frame_size, 1), raw);
    const GstVideoMeta* meta = gst_buffer_get_video_meta(first);
    gst_buffer_unref(first);
    for (int i = 0; i < 50; ++i) {
        GstBuffer* b = copies.copy(pattern(raw.format().max_frame_size, i), raw);
        EXPECT_EQ(b, first);
        EXPECT_EQ(gst_buffer_get_video_meta(b), meta); // kept, rewritten in place
        gst_buffer_unref(b);
    }
    EXPECT_EQ(copies.pools_made(), 1u);

    const FrameLayout encoded = opaque();
    const std::size_t sizes[] = {3000, 100, 2999, 5000, 6000, 40};
    for (const std::size_t size : sizes) {
        const auto frame = pattern(size, static_cast<int>(size));
        GstBuffer* b = copies.copy(frame, encoded);
        EXPECT_EQ(gst_buffer_get_size(b), size);
        EXPECT_EQ(gst_buffer_get_video_meta(b), nullptr) << "opaque caps: no layout";
        GstMapInfo map;
        ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
        EXPECT_TRUE(std::equal(frame.begin(), frame.end(), reinterpret_cast<const std::byte*>(map.data)));
        gst_buffer_unmap(b, &map);
        gst_buffer_unref(b);
    }
    // 3000 outgrows the raw frame's 112: a pool of 3000 (the frame, more
    // than twice 112); 5000 outgrows it: 6000 (twice), which 6000 fits.
    EXPECT_EQ(copies.pools_made(), 3u);
    EXPECT_EQ(copies.count(), 51u + std::size(sizes));
}

// rdmarecv --gst copies a buffer that wraps a slot already: bytes, layout,
// timestamps, offsets and flags; the copy's memory is its own.
TEST_F(FrameCopiesTest, CopiesABufferWithItsMetadata) {
    const FrameLayout layout = padded_i420();
    auto slot = pattern(layout.format().max_frame_size, 3);
    GstBuffer* src = gst_buffer_new_wrapped_full(static_cast<GstMemoryFlags>(0), slot.data(), slot.size(), 0,
                                                 slot.size(), nullptr, nullptr);
    set_video_meta(src, layout);
    GST_BUFFER_PTS(src) = 40;
    GST_BUFFER_DURATION(src) = 20;
    GST_BUFFER_OFFSET(src) = 7;
    GST_BUFFER_FLAG_SET(src, GST_BUFFER_FLAG_DELTA_UNIT);
    FrameCopies copies;
    for (int i = 0; i < 2; ++i) { // the second from the pool, its meta rewritten
        GstBuffer* b = copies.copy(src);
        EXPECT_EQ(GST_BUFFER_PTS(b), 40u);
        EXPECT_EQ(GST_BUFFER_DURATION(b), 20u);
        EXPECT_EQ(GST_BUFFER_OFFSET(b), 7u);
        EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DELTA_UNIT));
        GstMapInfo map;
        ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
        EXPECT_NE(map.data, reinterpret_cast<const guint8*>(slot.data()));
        EXPECT_TRUE(std::equal(slot.begin(), slot.end(), reinterpret_cast<const std::byte*>(map.data)));
        gst_buffer_unmap(b, &map);
        const GstVideoMeta* meta = gst_buffer_get_video_meta(b);
        ASSERT_NE(meta, nullptr);
        for (guint p = 0; p < 3; ++p) {
            EXPECT_EQ(meta->offset[p], layout.plane(p).offset) << p;
            EXPECT_EQ(static_cast<std::uint32_t>(meta->stride[p]), layout.plane(p).stride) << p;
        }
        gst_buffer_unref(b);
    }
    EXPECT_EQ(copies.count(), 2u);
    EXPECT_EQ(copies.pools_made(), 1u);
    gst_buffer_unref(src);
}

// Copies downstream still holds outlive their FrameCopies (rdmasrc stopped).
TEST_F(FrameCopiesTest, CopiesOutliveThePool) {
    const FrameLayout raw = padded_i420();
    GstBuffer* b = nullptr;
    const auto frame = pattern(raw.format().max_frame_size, 7);
    {
        FrameCopies copies;
        b = copies.copy(frame, raw);
    }
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), reinterpret_cast<const std::byte*>(map.data)));
    gst_buffer_unmap(b, &map);
    gst_buffer_unref(b);
}
