// SlotBuffers (the recycled buffers of rdmasrc and rdmarecv --gst) on a
// plain array standing in for the ring: a slot is freed exactly when the
// last reference to its memory goes, shells and memories are re-used, and
// the ring outlives every buffer.
#include "rdmastream_gst/slot_buffers.hpp"

#include "gst_test_env.hpp"

#include <gst/video/video.h>
#include <gtest/gtest.h>

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
        buffers_ = new SlotBuffers(kSlots, std::shared_ptr<void>(ring, [this](void* r) {
                                       delete static_cast<std::vector<std::byte>*>(r);
                                       ring_gone_ = true;
                                   }));
    }
    void TearDown() override {
        if (buffers_ != nullptr) {
            buffers_->unref();
        }
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
    SlotBuffers* buffers_ = nullptr;
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
    buffers_->unref(); // rdmasrc stopped
    buffers_ = nullptr;
    gst_buffer_unref(a);
    gst_buffer_unref(b);
    EXPECT_FALSE(ring_gone_);
    GstMapInfo map;
    ASSERT_TRUE(gst_buffer_map(copy, &map, GST_MAP_READ)); // still points into the ring
    gst_buffer_unmap(copy, &map);
    gst_buffer_unref(copy);
    EXPECT_TRUE(ring_gone_);
}
