// SPDX-License-Identifier: LGPL-2.1-or-later
// rdma:// URIs, natively: both elements are found for the scheme (as
// uridecodebin and gst_element_make_from_uri find them), a URI sets host,
// port, role and properties, get_uri gives it back, and every bad URI is
// refused with a GError naming what is wrong, the element unchanged.
#include "rdmauri.hpp"

#include <gst/gst.h>

#include "gst_test_env.hpp"

#include <gtest/gtest.h>

#include <string>

using rdmastream::gst::parse_rdma_uri;
using rdmastream::gst::UriError;

namespace {

class UriTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() { init_gstreamer_for_tests(); }
};

GstElement* from_uri(GstURIType type, const char* uri) {
    GError* err = nullptr;
    GstElement* e = gst_element_make_from_uri(type, uri, "made", &err);
    EXPECT_EQ(err, nullptr) << uri << ": " << (err != nullptr ? err->message : "");
    if (err != nullptr) {
        g_error_free(err);
    }
    return e;
}

std::string factory(GstElement* e) { return GST_OBJECT_NAME(gst_element_get_factory(e)); }

std::string str(GstElement* e, const char* prop) {
    gchar* v = nullptr;
    g_object_get(e, prop, &v, nullptr);
    std::string out = v != nullptr ? v : "(null)";
    g_free(v);
    return out;
}

guint uint_prop(GstElement* e, const char* prop) {
    guint v = 0;
    g_object_get(e, prop, &v, nullptr);
    return v;
}

std::string nick(GstElement* e, const char* prop) {
    GValue v = G_VALUE_INIT;
    g_value_init(&v, g_object_class_find_property(G_OBJECT_GET_CLASS(e), prop)->value_type);
    g_object_get_property(G_OBJECT(e), prop, &v);
    auto* klass = static_cast<GEnumClass*>(g_type_class_ref(G_VALUE_TYPE(&v)));
    std::string out = g_enum_get_value(klass, g_value_get_enum(&v))->value_nick;
    g_type_class_unref(klass);
    g_value_unset(&v);
    return out;
}

std::string uri_of(GstElement* e) {
    gchar* u = gst_uri_handler_get_uri(GST_URI_HANDLER(e));
    std::string out = u != nullptr ? u : "(null)";
    g_free(u);
    return out;
}

// The GError a refused URI gets ("" when it was accepted).
std::string refusal(GstElement* e, const char* uri, gint* code = nullptr) {
    GError* err = nullptr;
    const gboolean ok = gst_uri_handler_set_uri(GST_URI_HANDLER(e), uri, &err);
    if (ok) {
        EXPECT_EQ(err, nullptr);
        return "";
    }
    EXPECT_NE(err, nullptr) << uri;
    if (err == nullptr) {
        return "(no GError)";
    }
    EXPECT_EQ(err->domain, GST_URI_ERROR) << uri;
    if (code != nullptr) {
        *code = err->code;
    }
    std::string msg = err->message;
    g_error_free(err);
    return msg;
}

} // namespace

// Every element here is named: an unnamed one would shift the numbers in
// the default names (rdmasink0) that elements_test.cpp's messages carry.
TEST_F(UriTest, BothElementsHandleTheRdmaScheme) {
    EXPECT_TRUE(gst_uri_protocol_is_supported(GST_URI_SRC, "rdma"));
    EXPECT_TRUE(gst_uri_protocol_is_supported(GST_URI_SINK, "rdma"));
    GstElement* src = from_uri(GST_URI_SRC, "rdma://0.0.0.0:18515");
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(factory(src), "rdmasrcbin"); // rdmasrc with a sometimes pad per flow (rdmasrcbin.hpp)
    GstElement* sink = from_uri(GST_URI_SINK, "rdma://198.18.0.1:18515");
    ASSERT_NE(sink, nullptr);
    EXPECT_EQ(factory(sink), "rdmasink");
    gst_object_unref(src);
    gst_object_unref(sink);
    // Ranked like srtsrc/udpsrc's peers, so a URI-driven bin prefers it;
    // rdmasrcbin above it.
    GstElementFactory* f = gst_element_factory_find("rdmasrc");
    EXPECT_EQ(gst_plugin_feature_get_rank(GST_PLUGIN_FEATURE(f)), static_cast<guint>(GST_RANK_PRIMARY));
    gst_object_unref(f);
    f = gst_element_factory_find("rdmasrcbin");
    EXPECT_GT(gst_plugin_feature_get_rank(GST_PLUGIN_FEATURE(f)), static_cast<guint>(GST_RANK_PRIMARY));
    gst_object_unref(f);
}

// rdmasrcbin has every property of rdmasrc's own, the same type and
// default, and passes each on to the rdmasrc inside; it starts with no pad
// (what uridecodebin needs to follow the pads it adds).
TEST_F(UriTest, RdmasrcbinPassesEveryPropertyOnToItsRdmasrc) {
    GstElement* bin = gst_element_factory_make("rdmasrcbin", "bin");
    GstElement* plain = gst_element_factory_make("rdmasrc", "plain");
    ASSERT_NE(bin, nullptr);
    EXPECT_EQ(GST_ELEMENT(bin)->numsrcpads, 0);
    GstElement* inner = gst_bin_get_by_name(GST_BIN(bin), "rdmasrc");
    ASSERT_NE(inner, nullptr);
    guint n = 0;
    GParamSpec** specs = g_object_class_list_properties(G_OBJECT_GET_CLASS(plain), &n);
    int checked = 0;
    for (guint i = 0; i < n; ++i) {
        if (specs[i]->owner_type != G_OBJECT_TYPE(plain)) continue;
        GParamSpec* m = g_object_class_find_property(G_OBJECT_GET_CLASS(bin), specs[i]->name);
        ASSERT_NE(m, nullptr) << specs[i]->name;
        EXPECT_EQ(m->value_type, specs[i]->value_type) << specs[i]->name;
        EXPECT_EQ(m->flags, specs[i]->flags) << specs[i]->name;
        EXPECT_EQ(g_param_values_cmp(m, g_param_spec_get_default_value(m), g_param_spec_get_default_value(specs[i])), 0)
            << specs[i]->name;
        ++checked;
    }
    g_free(specs);
    EXPECT_GT(checked, 20);
    g_object_set(bin, "slots", 12u, "key-file", "/k", "poll-mode", 1, nullptr);
    guint slots = 0;
    g_object_get(inner, "slots", &slots, nullptr);
    EXPECT_EQ(slots, 12u);
    EXPECT_EQ(str(inner, "key-file"), "/k");
    EXPECT_EQ(nick(bin, "poll-mode"), nick(inner, "poll-mode"));
    EXPECT_EQ(str(bin, "uri"), str(inner, "uri"));
    gst_object_unref(inner);
    gst_object_unref(bin);
    gst_object_unref(plain);
}

TEST_F(UriTest, AWildcardHostListensAndTheQuerySetsProperties) {
    GstElement* src = from_uri(GST_URI_SRC, "rdma://0.0.0.0:4000?slots=16&poll-mode=busy&memory-windows=true");
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(nick(src, "role"), "listen");
    EXPECT_EQ(str(src, "host"), "0.0.0.0");
    EXPECT_EQ(uint_prop(src, "port"), 4000u);
    EXPECT_EQ(uint_prop(src, "slots"), 16u);
    EXPECT_EQ(nick(src, "poll-mode"), "busy");
    gboolean windows = FALSE;
    g_object_get(src, "memory-windows", &windows, nullptr);
    EXPECT_TRUE(windows);
    gst_object_unref(src);

    // Either element can listen; an IPv6 wildcard in brackets too.
    GstElement* sink = from_uri(GST_URI_SINK, "rdma://[::]:5000?policy=live");
    ASSERT_NE(sink, nullptr);
    EXPECT_EQ(nick(sink, "role"), "listen");
    EXPECT_EQ(str(sink, "host"), "::");
    EXPECT_EQ(uint_prop(sink, "port"), 5000u);
    EXPECT_EQ(nick(sink, "policy"), "live");
    gst_object_unref(sink);
}

TEST_F(UriTest, AnyOtherHostIsThePeerToDial) {
    GstElement* src = from_uri(GST_URI_SRC, "rdma://198.18.0.2:18600?connect-timeout=30000");
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(nick(src, "role"), "connect"); // rdmasrc's own default is listen
    EXPECT_EQ(str(src, "host"), "198.18.0.2");
    EXPECT_EQ(uint_prop(src, "connect-timeout"), 30000u);
    gst_object_unref(src);
    GstElement* sink = from_uri(GST_URI_SINK, "rdma://receiver.example");
    ASSERT_NE(sink, nullptr);
    EXPECT_EQ(nick(sink, "role"), "connect");
    EXPECT_EQ(str(sink, "host"), "receiver.example");
    EXPECT_EQ(uint_prop(sink, "port"), 18515u); // no port: the default
    gst_object_unref(sink);
}

TEST_F(UriTest, RoleInTheQueryOverridesTheHost) {
    GstElement* src = from_uri(GST_URI_SRC, "rdma://198.18.0.1:18515?role=listen&allow=198.18.0.0/16");
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(nick(src, "role"), "listen"); // on that one local address
    EXPECT_EQ(str(src, "host"), "198.18.0.1");
    EXPECT_EQ(str(src, "allow"), "198.18.0.0/16");
    gst_object_unref(src);
}

TEST_F(UriTest, GetUriGivesBackWhatWasSet) {
    GstElement* src = gst_element_factory_make("rdmasrc", "named");
    EXPECT_EQ(uri_of(src), "rdma://0.0.0.0:18515"); // the defaults: listen on every address
    const char* uri = "rdma://198.18.0.1:4000?role=listen&slots=16&key-file=/tmp/my%20key&poll-mode=busy";
    ASSERT_EQ(refusal(src, uri), "");
    const std::string back = uri_of(src);
    // Same properties, whatever their order: set it on a fresh element.
    GstElement* again = gst_element_factory_make("rdmasrc", "named");
    ASSERT_EQ(refusal(again, back.c_str()), "") << back;
    EXPECT_EQ(uri_of(again), back);
    EXPECT_EQ(nick(again, "role"), "listen");
    EXPECT_EQ(str(again, "host"), "198.18.0.1");
    EXPECT_EQ(uint_prop(again, "port"), 4000u);
    EXPECT_EQ(uint_prop(again, "slots"), 16u);
    EXPECT_EQ(str(again, "key-file"), "/tmp/my key");
    EXPECT_EQ(nick(again, "poll-mode"), "busy");
    EXPECT_EQ(back.find("slot-size"), std::string::npos) << back; // defaults stay out
    // The uri property is the same thing.
    EXPECT_EQ(str(again, "uri"), back);
    gst_object_unref(src);
    gst_object_unref(again);

    GstElement* sink = gst_element_factory_make("rdmasink", "named");
    EXPECT_EQ(uri_of(sink), "(null)"); // dials nobody yet
    ASSERT_EQ(refusal(sink, "rdma://[fe80::1]:7000?policy=live"), "");
    EXPECT_EQ(uri_of(sink), "rdma://[fe80::1]:7000?policy=live");
    gst_object_unref(sink);
}

TEST_F(UriTest, TheUriPropertyWorksFromGstLaunchStrings) {
    GError* err = nullptr;
    GstElement* pipeline =
        gst_parse_launch("rdmasrc name=s uri=\"rdma://0.0.0.0:4000?slots=12&copy-threshold=3\" ! fakesink", &err);
    ASSERT_EQ(err, nullptr) << err->message;
    GstElement* src = gst_bin_get_by_name(GST_BIN(pipeline), "s");
    EXPECT_EQ(uint_prop(src, "port"), 4000u);
    EXPECT_EQ(uint_prop(src, "slots"), 12u);
    EXPECT_EQ(uint_prop(src, "copy-threshold"), 3u);
    gst_object_unref(src);
    gst_object_unref(pipeline);
}

TEST_F(UriTest, BadUrisAreRefusedSayingWhatIsWrong) {
    struct Case {
        const char* factory;
        const char* uri;
        const char* says;
    };
    const Case cases[] = {
        {"rdmasrc", "rdma://:18515", "missing host in rdma://:18515: rdma://0.0.0.0:PORT listens"},
        {"rdmasrc", "rdma://?slots=4", "missing host"},
        {"rdmasrc", "rdma://h:99999", "bad port '99999' in rdma://h:99999: a port is a number from 1 to 65535"},
        {"rdmasrc", "rdma://h:0", "bad port '0'"},
        {"rdmasrc", "rdma://h:abc", "bad port 'abc'"},
        {"rdmasrc", "rdma://h:", "bad port ''"},
        {"rdmasrc", "rdma://h?slotz=8", "rdmasrc: unknown parameter 'slotz' in rdma://h?slotz=8: rdmasrc takes "},
        {"rdmasink", "rdma://h?slots=8", "rdmasink: unknown parameter 'slots'"}, // rdmasrc's, not rdmasink's
        {"rdmasrc", "rdma://h?stats=1", "unknown parameter 'stats'"},            // read-only
        {"rdmasrc", "rdma://h?num-buffers=1", "unknown parameter 'num-buffers'"}, // basesrc's, not ours
        {"rdmasrc", "rdma://h?slots=0", "bad value '0' for slots in rdma://h?slots=0: slots takes a number from 1 to 256"},
        {"rdmasrc", "rdma://h?slots=many", "bad value 'many' for slots"},
        {"rdmasrc", "rdma://h?slots=-1", "bad value '-1' for slots"},
        {"rdmasrc", "rdma://h?poll-mode=fast", "bad value 'fast' for poll-mode in rdma://h?poll-mode=fast: poll-mode takes event or busy"},
        {"rdmasink", "rdma://h?policy=7", "policy takes lossless or live"},
        {"rdmasink", "rdma://h?offer-pool=maybe", "offer-pool takes true or false"},
        {"rdmasrc", "rdma://h?slots", "parameter 'slots' has no value in rdma://h?slots: write slots=VALUE"},
        {"rdmasrc", "rdma://h?slots=4&slots=8", "parameter 'slots' is given twice"},
        {"rdmasrc", "rdma://h?port=5", "parameter 'port' in rdma://h?port=5: the port goes in the URI itself"},
        {"rdmasrc", "rdma://h?host=x", "the host goes in the URI itself"},
        {"rdmasrc", "rdma://h/stream", "unexpected path '/stream'"},
        {"rdmasrc", "rdma://h#x", "unexpected fragment '#x'"},
        {"rdmasrc", "rdma://fe80::1:5000", "an IPv6 address goes in brackets"},
        {"rdmasrc", "rdma://[fe80::1:5000", "an IPv6 address ends with ']'"},
        {"rdmasrc", "rdma://user@h:5000", "has a user name"},
        {"rdmasrc", "rdma://h?key-file=%zz", "bad percent escape"},
    };
    for (const Case& c : cases) {
        GstElement* e = gst_element_factory_make(c.factory, "named");
        gint code = -1;
        const std::string msg = refusal(e, c.uri, &code);
        EXPECT_NE(msg.find(c.says), std::string::npos) << c.uri << " -> \"" << msg << "\"";
        EXPECT_EQ(code, GST_URI_ERROR_BAD_URI) << c.uri;
        gst_object_unref(e);
    }
}

TEST_F(UriTest, ARefusedUriChangesNothing) {
    GstElement* src = gst_element_factory_make("rdmasrc", "named");
    EXPECT_NE(refusal(src, "rdma://198.18.0.9:4000?slots=16&poll-mode=busy&bogus=1"), "");
    EXPECT_EQ(str(src, "host"), "");
    EXPECT_EQ(uint_prop(src, "port"), 18515u);
    EXPECT_EQ(uint_prop(src, "slots"), 8u);
    EXPECT_EQ(nick(src, "role"), "listen");
    EXPECT_EQ(nick(src, "poll-mode"), "event");
    gst_object_unref(src);
}

TEST_F(UriTest, AnotherSchemeIsNotOurs) {
    GstElement* src = gst_element_factory_make("rdmasrc", "named");
    gint code = -1;
    EXPECT_NE(refusal(src, "udp://198.18.0.1:5000", &code), "");
    EXPECT_EQ(code, GST_URI_ERROR_UNSUPPORTED_PROTOCOL); // GStreamer's own check, before ours
    gst_object_unref(src);
    EXPECT_THROW(parse_rdma_uri("srt://h:1"), UriError);
}

TEST_F(UriTest, ParsedPartsAreDecoded) {
    const auto u = parse_rdma_uri("RDMA://[fe80::1%25eth0]:7/?allow=10.0.0.0%2F8,%3A%3A1&&timeout=5&");
    EXPECT_EQ(u.host, "fe80::1%eth0");
    ASSERT_TRUE(u.port.has_value());
    EXPECT_EQ(*u.port, 7u);
    ASSERT_EQ(u.params.size(), 2u);
    EXPECT_EQ(u.params[0].first, "allow");
    EXPECT_EQ(u.params[0].second, "10.0.0.0/8,::1");
    EXPECT_EQ(u.params[1].first, "timeout");
    EXPECT_EQ(u.params[1].second, "5");
    EXPECT_FALSE(parse_rdma_uri("rdma://h").port.has_value());
}

// What playbin does with an rdma:// URI: uridecodebin makes rdmasrcbin from it
// (here it fails to listen, there is no RDMA device, and says so), and a bad
// URI's GError reaches the application as the error message.
TEST_F(UriTest, PlaybinMakesRdmasrcbinFromTheUri) {
    for (const auto& [uri, says] : {std::pair{"rdma://0.0.0.0:18515", "Could not listen for an RDMA sender on 0.0.0.0:18515"},
                                    std::pair{"rdma://0.0.0.0:18515?slotz=8", "unknown parameter 'slotz'"}}) {
        GstElement* playbin = gst_element_factory_make("playbin", nullptr);
        ASSERT_NE(playbin, nullptr) << "playbin (gstreamer1.0-plugins-base) is missing";
        std::string made;
        g_signal_connect(playbin, "source-setup", G_CALLBACK(+[](GstElement*, GstElement* source, gpointer data) {
                             *static_cast<std::string*>(data) = factory(source);
                         }),
                         &made);
        GstElement* fake = gst_element_factory_make("fakesink", nullptr);
        g_object_set(playbin, "uri", uri, "video-sink", fake, nullptr);
        gst_element_set_state(playbin, GST_STATE_PLAYING);
        GstBus* bus = gst_element_get_bus(playbin);
        GstMessage* msg = gst_bus_timed_pop_filtered(bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
        ASSERT_NE(msg, nullptr) << uri;
        GError* err = nullptr;
        gst_message_parse_error(msg, &err, nullptr);
        EXPECT_NE(std::string(err->message).find(says), std::string::npos) << uri << ": " << err->message;
        if (std::string(says).find("listen") != std::string::npos) {
            EXPECT_EQ(made, "rdmasrcbin");
        }
        g_error_free(err);
        gst_message_unref(msg);
        gst_element_set_state(playbin, GST_STATE_NULL);
        gst_object_unref(bus);
        gst_object_unref(playbin);
    }
}
