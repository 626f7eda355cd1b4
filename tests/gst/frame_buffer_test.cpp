// SPDX-License-Identifier: LGPL-2.1-or-later
// A frame's header on its GstBuffer (gstslots' frame_buffer.hpp): the
// wire's flags and times both ways, and stamp_frame_buffer, the one rule
// rdmasrc and rdmarecv --gst stamp their buffers by, on a buffer that wraps
// a slot and on the copy rdmarecv makes of one its pipeline would hold.
#include "rdmastream_gst/frame_buffer.hpp"
#include "rdmastream_gst/frame_copies.hpp"
#include "rdmastream_gst/slot_buffers.hpp"

#include "rdmastream/no_time.hpp"

#include "gst_test_env.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace rdmastream;
using namespace rdmastream::gst;

namespace {

constexpr guint kTravelling =
    GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT | GST_BUFFER_FLAG_HEADER | GST_BUFFER_FLAG_CORRUPTED;

FrameHeader header(std::uint64_t sequence, std::int64_t pts, std::int64_t duration, std::uint16_t flags) {
    FrameHeader h;
    h.sequence = sequence;
    h.pts = pts;
    h.duration = duration;
    h.flags = flags;
    return h;
}

std::int64_t ns(GstClockTime t) { return static_cast<std::int64_t>(t); }

class FrameBufferTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { init_gstreamer_for_tests(); }
};

} // namespace

TEST_F(FrameBufferTest, FlagsRoundTrip) {
    const auto all = static_cast<GstBufferFlags>(kTravelling);
    EXPECT_EQ(wire_flags(all), 0xf);
    EXPECT_EQ(wire_flags(GST_BUFFER_FLAG_DISCONT), 1);
    EXPECT_EQ(wire_flags(GST_BUFFER_FLAG_DELTA_UNIT), 2);
    EXPECT_EQ(buffer_flags(0xf), all);
    EXPECT_EQ(wire_flags(GST_BUFFER_FLAG_GAP), 0); // not on the wire
}

TEST_F(FrameBufferTest, TimeNoneIsInt64Min) {
    EXPECT_EQ(wire_time(GST_CLOCK_TIME_NONE), kNoTime);
    EXPECT_EQ(clock_time(kNoTime), GST_CLOCK_TIME_NONE);
    EXPECT_EQ(clock_time(wire_time(33 * GST_MSECOND)), 33 * GST_MSECOND);
    EXPECT_EQ(wire_time(0), 0);
}

// rdmasrc's stamp (no origin): the sender's times, flags and frame number.
TEST_F(FrameBufferTest, StampsTheSendersTimesFlagsAndFrameNumber) {
    GstBuffer* b = gst_buffer_new();
    stamp_frame_buffer(b, header(41, ns(3 * GST_SECOND), ns(40 * GST_MSECOND), kFrameDiscont | kFrameDeltaUnit));
    EXPECT_EQ(GST_BUFFER_PTS(b), 3 * GST_SECOND);
    EXPECT_EQ(GST_BUFFER_DURATION(b), 40 * GST_MSECOND);
    EXPECT_EQ(GST_BUFFER_FLAGS(b) & kTravelling, guint{GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT});
    EXPECT_EQ(GST_BUFFER_OFFSET(b), 41u);
    stamp_frame_buffer(b, header(42, 0, 0, kFrameFlagsDefined));
    EXPECT_EQ(GST_BUFFER_FLAGS(b) & kTravelling, kTravelling);
    EXPECT_EQ(GST_BUFFER_PTS(b), 0u); // a time, not none
    gst_buffer_unref(b);
}

// The flags are this frame's, whatever the buffer carried; flags that do
// not travel are left alone.
TEST_F(FrameBufferTest, TheFlagsAreExactlyTheFramesAndOthersStay) {
    GstBuffer* b = gst_buffer_new();
    GST_BUFFER_FLAG_SET(b, kTravelling | GST_BUFFER_FLAG_LIVE);
    stamp_frame_buffer(b, header(1, 0, 0, kFrameHeader));
    EXPECT_EQ(GST_BUFFER_FLAGS(b) & kTravelling, guint{GST_BUFFER_FLAG_HEADER});
    EXPECT_TRUE(GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_LIVE));
    gst_buffer_unref(b);
}

// No time from the sender is none on the buffer, origin or not.
TEST_F(FrameBufferTest, WithoutTimesTheBufferHasNone) {
    GstBuffer* b = gst_buffer_new();
    stamp_frame_buffer(b, header(0, kNoTime, kNoTime, 0), GST_SECOND);
    EXPECT_EQ(GST_BUFFER_PTS(b), GST_CLOCK_TIME_NONE);
    EXPECT_EQ(GST_BUFFER_DURATION(b), GST_CLOCK_TIME_NONE);
    gst_buffer_unref(b);
}

// rdmarecv --gst's origin (its first frame's pts) is 0 on the buffer;
// durations are not shifted, and a pts before the origin is 0.
TEST_F(FrameBufferTest, AnOriginBecomesZero) {
    GstBuffer* b = gst_buffer_new();
    stamp_frame_buffer(b, header(0, ns(3600 * GST_SECOND), ns(40 * GST_MSECOND), 0), 3600 * GST_SECOND);
    EXPECT_EQ(GST_BUFFER_PTS(b), 0u);
    EXPECT_EQ(GST_BUFFER_DURATION(b), 40 * GST_MSECOND);
    stamp_frame_buffer(b, header(1, ns(3600 * GST_SECOND + 40 * GST_MSECOND), 0, 0), 3600 * GST_SECOND);
    EXPECT_EQ(GST_BUFFER_PTS(b), 40 * GST_MSECOND);
    stamp_frame_buffer(b, header(2, ns(GST_SECOND), 0, 0), 3600 * GST_SECOND);
    EXPECT_EQ(GST_BUFFER_PTS(b), 0u);
    gst_buffer_unref(b);
}

// rdmarecv --gst stamps the buffer that wraps the slot, and its pipeline
// may take a copy instead (FrameCopies, when it holds too many slots): the
// copy carries the same stamp, flags included.
TEST_F(FrameBufferTest, ACopyOfAStampedSlotBufferKeepsTheStamp) {
    std::vector<std::byte> ring(4 * 256);
    SlotBuffers slots(4, nullptr); // `ring` outlives every buffer here
    FrameCopies copies;
    GstBuffer* lent = slots.wrap_st(2, {ring.data() + 512, 100}, 256);
    stamp_frame_buffer(lent, header(7, ns(5 * GST_SECOND), ns(40 * GST_MSECOND), kFrameDiscont | kFrameCorrupted),
                       2 * GST_SECOND);
    GstBuffer* copy = copies.copy(lent);
    gst_buffer_unref(lent);
    EXPECT_EQ(GST_BUFFER_PTS(copy), 3 * GST_SECOND);
    EXPECT_EQ(GST_BUFFER_DURATION(copy), 40 * GST_MSECOND);
    EXPECT_EQ(GST_BUFFER_FLAGS(copy) & kTravelling, guint{GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_CORRUPTED});
    EXPECT_EQ(GST_BUFFER_OFFSET(copy), 7u);
    gst_buffer_unref(copy);
}
