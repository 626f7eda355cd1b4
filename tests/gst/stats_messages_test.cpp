// SPDX-License-Identifier: LGPL-2.1-or-later
// The elements' stats messages (stats-interval), natively: the ticker posts
// the counters it is given as element messages at its interval and stops
// with stop(); a started rdmasrc posts its "stats" structure on the bus,
// with each path's counters when it has two (host-b).
// That the counters rise with a real stream is the RDMA test's
// (rdma.gst_uri.one, tests/gst/uri.sh).
#include "rdmastatsticker.hpp"

#include <gst/gst.h>

#include "gst_test_env.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

using rdmastream::PathReport;
using rdmastream::gst::StatsTicker;

namespace {

class StatsMessagesTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { init_gstreamer_for_tests(); }
};

std::atomic<guint64> g_frames{0};

// Counters that rise by 10 at every look, as a running stream's would.
GstStructure* rising(GstElement*) {
    return gst_structure_new("TestStats", "frames", G_TYPE_UINT64, g_frames += 10, nullptr);
}

// The next element message on `bus` named `name`, within `timeout`.
GstMessage* next_stats(GstBus* bus, const char* name, GstClockTime timeout) {
    for (;;) {
        GstMessage* m = gst_bus_timed_pop_filtered(bus, timeout, GST_MESSAGE_ELEMENT);
        if (m == nullptr || gst_structure_has_name(gst_message_get_structure(m), name)) {
            return m;
        }
        gst_message_unref(m);
    }
}

} // namespace

TEST_F(StatsMessagesTest, TheTickerPostsTheCountersAtItsIntervalUntilStopped) {
    GstElement* pipeline = gst_pipeline_new(nullptr);
    GstElement* e = gst_element_factory_make("fakesink", "counted");
    gst_bin_add(GST_BIN(pipeline), e);
    GstBus* bus = gst_element_get_bus(pipeline);
    StatsTicker ticker;
    const gint64 t0 = g_get_monotonic_time();
    ticker.start(e, std::chrono::milliseconds(50), rising);
    guint64 last = 0;
    for (int i = 0; i < 4; ++i) {
        GstMessage* m = next_stats(bus, "TestStats", 2 * GST_SECOND);
        ASSERT_NE(m, nullptr) << "message " << i << " did not come";
        EXPECT_EQ(GST_MESSAGE_SRC(m), GST_OBJECT(e));
        guint64 frames = 0;
        ASSERT_TRUE(gst_structure_get_uint64(gst_message_get_structure(m), "frames", &frames));
        EXPECT_GT(frames, last);
        last = frames;
        gst_message_unref(m);
    }
    // Four ticks of 50 ms: not before 200 ms.
    EXPECT_GE(g_get_monotonic_time() - t0, 195 * 1000);
    ticker.stop();
    gst_bus_set_flushing(bus, TRUE); // what was posted before stop() goes
    gst_bus_set_flushing(bus, FALSE);
    GstMessage* after = next_stats(bus, "TestStats", 300 * GST_MSECOND);
    EXPECT_EQ(after, nullptr) << "a stats message after stop()";
    if (after != nullptr) {
        gst_message_unref(after);
    }
    gst_object_unref(bus);
    gst_object_unref(pipeline);
}

TEST_F(StatsMessagesTest, OffByDefault) {
    for (const char* name : {"rdmasrc", "rdmasink"}) {
        GstElement* e = gst_element_factory_make(name, "named");
        guint interval = 1;
        g_object_get(e, "stats-interval", &interval, nullptr);
        EXPECT_EQ(interval, 0u) << name;
        gst_object_unref(e);
    }
}

TEST_F(StatsMessagesTest, EachPathsCountersAreFieldsOfTheirOwn) {
    const std::vector<PathReport> paths = {
        {.name = 'A', .peer = "198.18.0.2:4000", .device = "rxe0", .up = true, .frames_first = 640, .frames_only = 80,
         .frames_lost = 2},
        {.name = 'B', .peer = "198.18.1.2:4001", .device = "rxe1", .up = false, .frames_first = 560, .frames_only = 3,
         .frames_lost = 82, .copies_differ = 1, .downs = 2, .ups = 1}};
    GstStructure* s = gst_structure_new_empty("TestStats");
    rdmastream::gst::add_path_fields(s, {}); // one path: nothing
    EXPECT_EQ(gst_structure_n_fields(s), 0);
    rdmastream::gst::add_path_fields(s, paths);
    EXPECT_EQ(gst_structure_n_fields(s), 2 * 9);
    EXPECT_STREQ(gst_structure_get_string(s, "path-a-peer"), "198.18.0.2:4000");
    EXPECT_STREQ(gst_structure_get_string(s, "path-b-device"), "rxe1");
    gboolean up = FALSE;
    EXPECT_TRUE(gst_structure_get_boolean(s, "path-a-up", &up));
    EXPECT_TRUE(up);
    EXPECT_TRUE(gst_structure_get_boolean(s, "path-b-up", &up));
    EXPECT_FALSE(up);
    const struct {
        const char* field;
        guint64 want;
    } counters[] = {{"path-a-frames-first", 640}, {"path-a-frames-only", 80}, {"path-a-frames-lost", 2},
                    {"path-a-copies-differ", 0},  {"path-a-downs", 0},        {"path-a-ups", 0},
                    {"path-b-frames-first", 560}, {"path-b-frames-only", 3},  {"path-b-frames-lost", 82},
                    {"path-b-copies-differ", 1},  {"path-b-downs", 2},        {"path-b-ups", 1}};
    for (const auto& c : counters) {
        guint64 v = 0;
        EXPECT_TRUE(gst_structure_get_uint64(s, c.field, &v)) << c.field;
        EXPECT_EQ(v, c.want) << c.field;
    }
    gst_structure_free(s);
}

// rdmasrc role=connect starts without a device (it dials from the streaming
// thread, which fails at once); until it goes back to READY it posts its
// counters, the "stats" structure, at its interval. One path ("src") has no
// path fields; two ("two", host-b) have each path's, down and zero.
TEST_F(StatsMessagesTest, AStartedRdmasrcPostsItsStatsStructure) {
    GError* err = nullptr;
    GstElement* pipeline = gst_parse_launch(
        "rdmasrc name=src role=connect host=198.18.0.1 connect-timeout=0 stats-interval=50 ! fakesink "
        "rdmasrc name=two role=connect host=127.0.0.1 host-b=127.0.0.2 connect-timeout=0 stats-interval=50 ! "
        "fakesink",
        &err);
    ASSERT_EQ(err, nullptr);
    gst_element_set_state(pipeline, GST_STATE_PLAYING);
    GstBus* bus = gst_element_get_bus(pipeline);
    int one = 0, two = 0;
    while (one < 3 || two < 3) {
        GstMessage* m = next_stats(bus, "GstRdmaSrcStats", 2 * GST_SECOND);
        ASSERT_NE(m, nullptr) << "messages did not come: " << one << " of one path, " << two << " of two";
        const bool paths = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(m))) == "two";
        ++(paths ? two : one);
        const GstStructure* s = gst_message_get_structure(m);
        for (const char* f : {"frames", "bytes", "drops", "format-changes", "copies"}) {
            EXPECT_TRUE(gst_structure_has_field_typed(s, f, G_TYPE_UINT64)) << f;
        }
        EXPECT_TRUE(gst_structure_has_field_typed(s, "max-frame-gap-ms", G_TYPE_DOUBLE));
        EXPECT_EQ(gst_structure_n_fields(s), paths ? 6 + 2 * 9 : 6);
        if (paths) {
            gboolean up = TRUE;
            EXPECT_TRUE(gst_structure_get_boolean(s, "path-b-up", &up));
            EXPECT_FALSE(up);
            guint64 first = 1;
            EXPECT_TRUE(gst_structure_get_uint64(s, "path-a-frames-first", &first));
            EXPECT_EQ(first, 0u);
        }
        gst_message_unref(m);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_bus_set_flushing(bus, TRUE);
    gst_bus_set_flushing(bus, FALSE);
    GstMessage* after = next_stats(bus, "GstRdmaSrcStats", 300 * GST_MSECOND);
    EXPECT_EQ(after, nullptr) << "a stats message after the element stopped";
    if (after != nullptr) {
        gst_message_unref(after);
    }
    gst_object_unref(bus);
    gst_object_unref(pipeline);
}
