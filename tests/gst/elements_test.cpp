// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasink and rdmasrc as users meet them, on a machine without an RDMA
// device: registration, properties, caps, and state changes that fail with
// a clear element error instead of hanging or crashing.
#include <gst/base/gstbasesrc.h>
#include <gst/gst.h>

#include "gst_test_env.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

class ElementsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { init_gstreamer_for_tests(); }
};

GstElement* make(const char* factory) {
    GstElement* e = gst_element_factory_make(factory, nullptr);
    EXPECT_NE(e, nullptr) << factory << " not found: is GST_PLUGIN_PATH pointing at the build?";
    return e;
}

std::string enum_nick(GObject* obj, const char* prop) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, g_object_class_find_property(G_OBJECT_GET_CLASS(obj), prop)->value_type);
    g_object_get_property(obj, prop, &v);
    GEnumClass* klass = G_ENUM_CLASS(g_type_class_ref(G_VALUE_TYPE(&v)));
    const std::string nick = g_enum_get_value(klass, g_value_get_enum(&v))->value_nick;
    g_type_class_unref(klass);
    g_value_unset(&v);
    return nick;
}

// Runs `description` to PLAYING and returns the first error on the bus
// ("domain: message | debug"), or "" when none came within 10 s.
std::string first_error(const char* description, GstStateChangeReturn* ret = nullptr) {
    GError* err = nullptr;
    GstElement* pipeline = gst_parse_launch(description, &err);
    EXPECT_EQ(err, nullptr);
    const GstStateChangeReturn r = gst_element_set_state(pipeline, GST_STATE_PLAYING);
    if (ret != nullptr) {
        *ret = r;
    }
    GstBus* bus = gst_element_get_bus(pipeline);
    GstMessage* msg = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND,
                                                 static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
    std::string text;
    if (msg != nullptr && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
        GError* e = nullptr;
        gchar* dbg = nullptr;
        gst_message_parse_error(msg, &e, &dbg);
        text = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(msg))) + ": " + e->message + " | " + (dbg ? dbg : "");
        g_error_free(e);
        g_free(dbg);
    }
    if (msg != nullptr) {
        gst_message_unref(msg);
    }
    EXPECT_EQ(gst_element_set_state(pipeline, GST_STATE_NULL), GST_STATE_CHANGE_SUCCESS);
    gst_object_unref(bus);
    gst_object_unref(pipeline);
    return text;
}

// A value for `p` other than its default.
void set_other_value(GParamSpec* p, GValue* v) {
    g_value_init(v, p->value_type);
    g_param_value_set_default(p, v);
    switch (G_TYPE_FUNDAMENTAL(p->value_type)) {
    case G_TYPE_UINT: {
        const GParamSpecUInt* u = G_PARAM_SPEC_UINT(p);
        g_value_set_uint(v, u->default_value < u->maximum ? u->default_value + 1 : u->default_value - 1);
        break;
    }
    case G_TYPE_UINT64: {
        const GParamSpecUInt64* u = G_PARAM_SPEC_UINT64(p);
        g_value_set_uint64(v, u->default_value < u->maximum ? u->default_value + 1 : u->default_value - 1);
        break;
    }
    case G_TYPE_BOOLEAN: g_value_set_boolean(v, !G_PARAM_SPEC_BOOLEAN(p)->default_value); break;
    case G_TYPE_STRING: g_value_set_string(v, "10.0.0.7"); break;
    case G_TYPE_ENUM: {
        const GParamSpecEnum* e = G_PARAM_SPEC_ENUM(p);
        for (guint i = 0; i < e->enum_class->n_values; ++i) {
            if (e->enum_class->values[i].value != e->default_value) {
                g_value_set_enum(v, e->enum_class->values[i].value);
            }
        }
        break;
    }
    default: ADD_FAILURE() << p->name << ": a property type this test does not know";
    }
}

} // namespace

TEST_F(ElementsTest, BothElementsRegisterInThePluginRdma) {
    for (const char* name : {"rdmasink", "rdmasrc"}) {
        GstElementFactory* f = gst_element_factory_find(name);
        ASSERT_NE(f, nullptr) << name;
        GstPlugin* plugin = gst_plugin_feature_get_plugin(GST_PLUGIN_FEATURE(f));
        ASSERT_NE(plugin, nullptr);
        EXPECT_STREQ(gst_plugin_get_name(plugin), "rdma");
        gst_object_unref(plugin);
        gst_object_unref(f);
    }
}

TEST_F(ElementsTest, SinkDefaultsDialLikeUdpsink) {
    GstElement* sink = make("rdmasink");
    gchar* host = nullptr;
    guint port = 0, timeout = 0;
    gboolean pool = FALSE;
    g_object_get(sink, "host", &host, "port", &port, "timeout", &timeout, "offer-pool", &pool, nullptr);
    EXPECT_STREQ(host, "");
    EXPECT_EQ(port, 18515u);
    EXPECT_GT(timeout, 0u);
    EXPECT_TRUE(pool);
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "role"), "connect");
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "policy"), "lossless");
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "poll-mode"), "event");
    g_free(host);
    gst_object_unref(sink);
}

TEST_F(ElementsTest, SrcDefaultsListenLikeUdpsrc) {
    GstElement* src = make("rdmasrc");
    guint slots = 0, slot_size = 0;
    g_object_get(src, "slots", &slots, "slot-size", &slot_size, nullptr);
    EXPECT_EQ(slots, 8u);
    EXPECT_EQ(slot_size, 4u << 20);
    guint copy_threshold = 0;
    g_object_get(src, "copy-threshold", &copy_threshold, nullptr);
    EXPECT_EQ(copy_threshold, 2u); // a holding element downstream costs copies, never a stall
    EXPECT_EQ(enum_nick(G_OBJECT(src), "role"), "listen");
    EXPECT_TRUE(gst_base_src_is_live(GST_BASE_SRC(src)));
    gst_object_unref(src);
}

TEST_F(ElementsTest, PropertiesTakeGstLaunchStrings) {
    GstElement* sink = make("rdmasink");
    gst_util_set_object_arg(G_OBJECT(sink), "role", "listen");
    gst_util_set_object_arg(G_OBJECT(sink), "policy", "live");
    gst_util_set_object_arg(G_OBJECT(sink), "poll-mode", "busy");
    gst_util_set_object_arg(G_OBJECT(sink), "host", "198.18.0.1");
    gst_util_set_object_arg(G_OBJECT(sink), "device", "rxe0");
    gst_util_set_object_arg(G_OBJECT(sink), "port", "4000");
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "role"), "listen");
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "policy"), "live");
    EXPECT_EQ(enum_nick(G_OBJECT(sink), "poll-mode"), "busy");
    gchar* host = nullptr;
    gchar* device = nullptr;
    guint port = 0;
    g_object_get(sink, "host", &host, "device", &device, "port", &port, nullptr);
    EXPECT_STREQ(host, "198.18.0.1");
    EXPECT_STREQ(device, "rxe0");
    EXPECT_EQ(port, 4000u);
    g_free(host);
    g_free(device);
    gst_object_unref(sink);
}

// Each property of the elements' own, set to a value other than its
// default, reads back as set and leaves every other one at its default
// (one table maps them all: a property writing another's field shows).
TEST_F(ElementsTest, EveryPropertyReadsBackWhatWasSetAndOnlyThat) {
    for (const char* factory : {"rdmasink", "rdmasrc"}) {
        GstElement* probe = make(factory);
        guint n = 0;
        GParamSpec** specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(probe), &n);
        int checked = 0;
        for (guint i = 0; i < n; ++i) {
            GParamSpec* p = specs[i];
            if (p->owner_type != G_OBJECT_TYPE(probe) || (p->flags & G_PARAM_WRITABLE) == 0 ||
                std::string(p->name) == "uri") { // the uri is the others, written at once
                continue;
            }
            GstElement* e = make(factory);
            GValue set = G_VALUE_INIT;
            set_other_value(p, &set);
            g_object_set_property(G_OBJECT(e), p->name, &set);
            for (guint j = 0; j < n; ++j) {
                GParamSpec* q = specs[j];
                if (q->owner_type != G_OBJECT_TYPE(probe) || (q->flags & G_PARAM_WRITABLE) == 0 ||
                    std::string(q->name) == "uri") {
                    continue;
                }
                GValue got = G_VALUE_INIT;
                g_value_init(&got, q->value_type);
                g_object_get_property(G_OBJECT(e), q->name, &got);
                GValue want = G_VALUE_INIT;
                g_value_init(&want, q->value_type);
                if (q == p) {
                    g_value_copy(&set, &want);
                } else {
                    g_param_value_set_default(q, &want);
                }
                EXPECT_EQ(g_param_values_cmp(q, &got, &want), 0) << factory << ": set " << p->name << ", read "
                                                                  << q->name;
                g_value_unset(&got);
                g_value_unset(&want);
            }
            g_value_unset(&set);
            gst_object_unref(e);
            ++checked;
        }
        EXPECT_GE(checked, 12) << factory;
        g_free(specs);
        gst_object_unref(probe);
    }
}

TEST_F(ElementsTest, StatsAreAStructureOfCounters) {
    GstElement* sink = make("rdmasink");
    GstStructure* s = nullptr;
    g_object_get(sink, "stats", &s, nullptr);
    ASSERT_NE(s, nullptr);
    for (const char* f : {"frames", "bytes", "drops", "credit-waits", "copies"}) {
        guint64 v = 1;
        EXPECT_TRUE(gst_structure_get_uint64(s, f, &v)) << f;
        EXPECT_EQ(v, 0u) << f;
    }
    EXPECT_TRUE(gst_structure_has_field(s, "latency-mean-us"));
    gst_structure_free(s);
    gst_object_unref(sink);

    GstElement* src = make("rdmasrc");
    g_object_get(src, "stats", &s, nullptr);
    ASSERT_NE(s, nullptr);
    for (const char* f : {"frames", "bytes", "drops", "format-changes", "copies"}) {
        guint64 v = 1;
        EXPECT_TRUE(gst_structure_get_uint64(s, f, &v)) << f;
        EXPECT_EQ(v, 0u) << f;
    }
    gst_structure_free(s);
    gst_object_unref(src);
}

TEST_F(ElementsTest, SinkAcceptsRawVideoOfAnyLayoutAndOpaqueCaps) {
    // Asked in NULL: a harness would start the element, which needs a device.
    GstElement* sink = make("rdmasink");
    GstPad* pad = gst_element_get_static_pad(sink, "sink");
    for (const char* c : {"video/x-raw,format=I420,width=320,height=240,framerate=30/1",
                          "video/x-raw,format=v210,width=1920,height=1080", "image/jpeg,width=64,height=64",
                          "video/x-h264,stream-format=byte-stream,alignment=au"}) {
        GstCaps* caps = gst_caps_from_string(c);
        EXPECT_TRUE(gst_pad_query_accept_caps(pad, caps)) << c;
        gst_caps_unref(caps);
    }
    gst_object_unref(pad);
    gst_object_unref(sink);
}

// The template states what the sink carries: not audio, not RTP, not
// memory it would have to download first.
TEST_F(ElementsTest, SinkRefusesWhatItCannotCarry) {
    GstElement* sink = make("rdmasink");
    GstPad* pad = gst_element_get_static_pad(sink, "sink");
    for (const char* c : {"audio/x-raw,format=S16LE,rate=48000,channels=2,layout=interleaved",
                          "application/x-rtp,media=video,encoding-name=H264,clock-rate=90000",
                          "video/x-raw(memory:GLMemory),format=RGBA,width=64,height=64,texture-target=2D"}) {
        GstCaps* caps = gst_caps_from_string(c);
        EXPECT_FALSE(gst_pad_query_accept_caps(pad, caps)) << c;
        gst_caps_unref(caps);
    }
    gst_object_unref(pad);
    gst_object_unref(sink);
}

TEST_F(ElementsTest, SrcAnswersTheLatencyQueryAsALiveSource) {
    GstElement* src = make("rdmasrc");
    GstQuery* q = gst_query_new_latency();
    ASSERT_TRUE(gst_element_query(src, q));
    gboolean live = FALSE;
    gst_query_parse_latency(q, &live, nullptr, nullptr);
    EXPECT_TRUE(live);
    gst_query_unref(q);
    gst_object_unref(src);
}

TEST_F(ElementsTest, SinkWithoutADeviceFailsWithTheSoftRoceRecipe) {
    GstStateChangeReturn r;
    const std::string e = first_error("videotestsrc num-buffers=5 ! rdmasink host=127.0.0.1 connect-timeout=0", &r);
    EXPECT_EQ(r, GST_STATE_CHANGE_FAILURE);
    EXPECT_NE(e.find("rdmasink0: Could not connect to RDMA receiver 127.0.0.1:18515"), std::string::npos) << e;
    EXPECT_NE(e.find("Soft-RoCE"), std::string::npos) << e;
}

TEST_F(ElementsTest, SinkWithoutHostSaysSo) {
    const std::string e = first_error("videotestsrc num-buffers=5 ! rdmasink");
    EXPECT_NE(e.find("set the host property"), std::string::npos) << e;
}

TEST_F(ElementsTest, SrcListeningWithoutADeviceFailsCleanly) {
    GstStateChangeReturn r;
    const std::string e = first_error("rdmasrc ! fakesink", &r);
    EXPECT_EQ(r, GST_STATE_CHANGE_FAILURE);
    EXPECT_NE(e.find("Could not listen for an RDMA sender"), std::string::npos) << e;
    EXPECT_NE(e.find("no RDMA device"), std::string::npos) << e;
}

TEST_F(ElementsTest, SrcConnectingWithoutADeviceErrorsFromTheStreamingThread) {
    const std::string e = first_error("rdmasrc role=connect host=198.18.0.1 connect-timeout=0 ! fakesink");
    EXPECT_NE(e.find("Lost the RDMA stream"), std::string::npos) << e;
    EXPECT_NE(e.find("no RDMA device"), std::string::npos) << e;
}

TEST_F(ElementsTest, FailedStartsCanBeRetried) {
    for (int i = 0; i < 3; ++i) {
        EXPECT_FALSE(first_error("videotestsrc ! rdmasink host=127.0.0.1 connect-timeout=0").empty());
        EXPECT_FALSE(first_error("rdmasrc ! fakesink").empty());
    }
}
