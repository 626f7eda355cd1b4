// SPDX-License-Identifier: LGPL-2.1-or-later
/**
 * SECTION:element-rdmasrcbin
 * @title: rdmasrcbin
 *
 * rdmasrc in a bin whose pads are all sometimes pads: "src_0" for the
 * sender's first flow (the picture), "src_N" for each other flow N (its
 * sound), all added at the stream's first frame, then no-more-pads. It is
 * the element rdma:// URIs make, so that playbin, gst-play-1.0 and
 * uridecodebin play every flow of a programme: they follow a source's new
 * pads only when it has none to begin with. Its properties are rdmasrc's.
 *
 * ## Example launch line
 * |[
 * gst-play-1.0 rdma://0.0.0.0:18515
 * ]| Waits for a sender on port 18515 and plays its picture and sound.
 */
#include "rdmasrcbin.hpp"

#include "rdmasrc.hpp"
#include "rdmauri.hpp"

#include <string>

GST_DEBUG_CATEGORY_STATIC(gst_rdma_src_bin_debug);
#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_src_bin_debug

struct _GstRdmaSrcBin {
    GstBin parent;
    GstElement* src; // the rdmasrc inside (the bin holds its reference)
};

// A namespace of its own: a unity build puts these beside rdmasrc.cpp's.
namespace rdmastream::gst::srcbin {

void uri_handler_init(gpointer g_iface, gpointer) {
    auto* iface = static_cast<GstURIHandlerInterface*>(g_iface);
    iface->get_type = [](GType) { return GST_URI_SRC; };
    iface->get_protocols = [](GType) -> const gchar* const* {
        static const gchar* const protocols[] = {rdmastream::gst::kUriScheme, nullptr};
        return protocols;
    };
    iface->get_uri = [](GstURIHandler* h) {
        return gst_uri_handler_get_uri(GST_URI_HANDLER(GST_RDMA_SRC_BIN(h)->src));
    };
    iface->set_uri = [](GstURIHandler* h, const gchar* uri, GError** error) {
        return gst_uri_handler_set_uri(GST_URI_HANDLER(GST_RDMA_SRC_BIN(h)->src), uri, error);
    };
}

} // namespace rdmastream::gst::srcbin

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
G_DEFINE_TYPE_WITH_CODE(GstRdmaSrcBin, gst_rdma_src_bin, GST_TYPE_BIN,
                        G_IMPLEMENT_INTERFACE(GST_TYPE_URI_HANDLER, rdmastream::gst::srcbin::uri_handler_init))
#pragma GCC diagnostic pop
// Above rdmasrc (primary): gst_element_make_from_uri takes the highest rank.
GST_ELEMENT_REGISTER_DEFINE(rdmasrcbin, "rdmasrcbin", GST_RANK_PRIMARY + 1, GST_TYPE_RDMA_SRC_BIN)

static GstStaticPadTemplate bin_src_template =
    GST_STATIC_PAD_TEMPLATE("src_%u", GST_PAD_SRC, GST_PAD_SOMETIMES, GST_STATIC_CAPS_ANY);

namespace rdmastream::gst::srcbin {

// The same property on this class: same name, texts, type, range, default
// and flags. rdmasrc's properties are of these types (a test checks that
// every one is here).
GParamSpec* mirror(GParamSpec* p) {
    const gchar* name = g_param_spec_get_name(p);
    const gchar* nick = g_param_spec_get_nick(p);
    const gchar* blurb = g_param_spec_get_blurb(p);
    const GParamFlags flags = p->flags;
    if (G_IS_PARAM_SPEC_UINT(p)) {
        auto* u = G_PARAM_SPEC_UINT(p);
        return g_param_spec_uint(name, nick, blurb, u->minimum, u->maximum, u->default_value, flags);
    }
    if (G_IS_PARAM_SPEC_UINT64(p)) {
        auto* u = G_PARAM_SPEC_UINT64(p);
        return g_param_spec_uint64(name, nick, blurb, u->minimum, u->maximum, u->default_value, flags);
    }
    if (G_IS_PARAM_SPEC_BOOLEAN(p)) {
        return g_param_spec_boolean(name, nick, blurb, G_PARAM_SPEC_BOOLEAN(p)->default_value, flags);
    }
    if (G_IS_PARAM_SPEC_STRING(p)) {
        return g_param_spec_string(name, nick, blurb, G_PARAM_SPEC_STRING(p)->default_value, flags);
    }
    if (G_IS_PARAM_SPEC_ENUM(p)) {
        return g_param_spec_enum(name, nick, blurb, p->value_type, G_PARAM_SPEC_ENUM(p)->default_value, flags);
    }
    if (G_IS_PARAM_SPEC_BOXED(p)) {
        return g_param_spec_boxed(name, nick, blurb, p->value_type, flags);
    }
    return nullptr;
}

// The same property of the rdmasrc inside.
void set_property(GObject* object, guint, const GValue* value, GParamSpec* pspec) {
    g_object_set_property(G_OBJECT(GST_RDMA_SRC_BIN(object)->src), pspec->name, value);
}

void get_property(GObject* object, guint, GValue* value, GParamSpec* pspec) {
    g_object_get_property(G_OBJECT(GST_RDMA_SRC_BIN(object)->src), pspec->name, value);
}

// Each flow goes out through a queue of its own: rdmasrc pushes every flow
// from its one streaming thread, as a demuxer does, and a sink prerolling
// on one flow's first buffer would hold that thread while the pipeline
// waits for another flow's sink to preroll (decodebin puts a multiqueue
// after a demuxer for the same reason). A queue holds up to a second of
// its flow (max-size-time's default); a picture held in it keeps its ring
// slot until copy-threshold has rdmasrc copy instead.
//
// The ghost is added with the flow's stream-start and caps already on it:
// uridecodebin exposes a pad whose current caps are raw as it is, and
// plugs a decodebin on any other, which would keep playbin's group
// incomplete until that flow's first buffer. The first flow's caps are not
// out yet at the stream's first frame: its caps query answers the
// announced ones (rdmasrc's get_caps). The real events follow with the
// first buffer.
void flow_out(GstRdmaSrcBin* self, GstPad* target, const gchar* name) {
    gchar* queue_name = g_strdup_printf("queue_%s", name);
    GstElement* queue = gst_element_factory_make("queue", queue_name);
    g_free(queue_name);
    g_object_set(queue, "max-size-buffers", 0u, "max-size-bytes", 0u, nullptr);
    gst_bin_add(GST_BIN(self), queue);
    gst_element_sync_state_with_parent(queue);
    GstPad* in = gst_element_get_static_pad(queue, "sink");
    gst_pad_link(target, in);
    gst_object_unref(in);
    GstPad* out = gst_element_get_static_pad(queue, "src");
    GstPadTemplate* templ = gst_element_class_get_pad_template(GST_ELEMENT_GET_CLASS(self), "src_%u");
    GstPad* pad = gst_ghost_pad_new_from_template(name, out, templ);
    gst_object_unref(out);
    gst_pad_set_active(pad, TRUE);
    if (GstEvent* start = gst_pad_get_sticky_event(target, GST_EVENT_STREAM_START, 0)) {
        gst_pad_store_sticky_event(pad, start);
        gst_event_unref(start);
        GstCaps* caps = gst_pad_get_current_caps(target);
        if (caps == nullptr) {
            caps = gst_pad_query_caps(target, nullptr);
            if (!gst_caps_is_fixed(caps)) gst_clear_caps(&caps);
        }
        if (caps != nullptr) {
            GstEvent* event = gst_event_new_caps(caps);
            gst_pad_store_sticky_event(pad, event);
            gst_event_unref(event);
            gst_caps_unref(caps);
        }
    }
    gst_element_add_pad(GST_ELEMENT(self), pad); // takes the floating reference
    GST_DEBUG_OBJECT(self, "flow pad %s", name);
}

// rdmasrc adds a pad per flow after the first at the stream's first frame,
// then says no-more-pads: the first flow's pad ("src") goes out last.
void on_pad_added(GstElement*, GstPad* pad, gpointer self) {
    gchar* name = gst_pad_get_name(pad); // src_N, N the flow
    flow_out(GST_RDMA_SRC_BIN(self), pad, name);
    g_free(name);
}

void on_no_more_pads(GstElement* src, gpointer self) {
    GstPad* first = gst_element_get_static_pad(src, "src");
    flow_out(GST_RDMA_SRC_BIN(self), first, "src_0");
    gst_object_unref(first);
    gst_element_no_more_pads(GST_ELEMENT(self));
}

// The flows' pads and queues go with the stream (rdmasrc's pads go in its
// stop()).
void remove_flow_pads(GstRdmaSrcBin* self) {
    auto* element = GST_ELEMENT(self);
    while (true) {
        GST_OBJECT_LOCK(element);
        GstPad* pad = element->srcpads != nullptr ? GST_PAD(gst_object_ref(element->srcpads->data)) : nullptr;
        GST_OBJECT_UNLOCK(element);
        if (pad == nullptr) break;
        gst_pad_set_active(pad, FALSE);
        gst_element_remove_pad(element, pad);
        gst_object_unref(pad);
    }
    while (true) {
        GstElement* queue = nullptr;
        GST_OBJECT_LOCK(element);
        for (GList* c = GST_BIN(self)->children; c != nullptr && queue == nullptr; c = c->next) {
            if (c->data != self->src) queue = GST_ELEMENT(gst_object_ref(c->data));
        }
        GST_OBJECT_UNLOCK(element);
        if (queue == nullptr) break;
        gst_element_set_state(queue, GST_STATE_NULL);
        gst_bin_remove(GST_BIN(self), queue);
        gst_object_unref(queue);
    }
}

GstStateChangeReturn change_state(GstElement* element, GstStateChange transition) {
    const GstStateChangeReturn r = GST_ELEMENT_CLASS(gst_rdma_src_bin_parent_class)->change_state(element, transition);
    if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) remove_flow_pads(GST_RDMA_SRC_BIN(element));
    return r;
}

} // namespace rdmastream::gst::srcbin

static void gst_rdma_src_bin_class_init(GstRdmaSrcBinClass* klass) {
    auto* gobject_class = G_OBJECT_CLASS(klass);
    auto* element_class = GST_ELEMENT_CLASS(klass);
    GST_DEBUG_CATEGORY_INIT(gst_rdma_src_bin_debug, "rdmasrcbin", 0, "rdmasrc with a sometimes pad per flow");
    gobject_class->set_property = rdmastream::gst::srcbin::set_property;
    gobject_class->get_property = rdmastream::gst::srcbin::get_property;
    element_class->change_state = rdmastream::gst::srcbin::change_state;

    // rdmasrc's own properties (not basesrc's), in its order. Its class is
    // kept: the mirrors share its static strings.
    auto* src_class = static_cast<GObjectClass*>(g_type_class_ref(GST_TYPE_RDMA_SRC));
    guint n = 0;
    GParamSpec** specs = g_object_class_list_properties(src_class, &n);
    guint id = 1;
    for (guint i = 0; i < n; ++i) {
        if (specs[i]->owner_type != GST_TYPE_RDMA_SRC) continue;
        if (GParamSpec* m = rdmastream::gst::srcbin::mirror(specs[i])) {
            g_object_class_install_property(gobject_class, id++, m);
        } else {
            g_critical("rdmasrcbin: rdmasrc's property %s is of a type it cannot pass on", specs[i]->name);
        }
    }
    g_free(specs);

    gst_element_class_add_static_pad_template(element_class, &bin_src_template);
    gst_element_class_set_static_metadata(element_class, "RDMA source bin", "Source/Network",
                                          "Receives a programme over RDMA: a sometimes pad per flow",
                                          "rdmastream developers");
}

static void gst_rdma_src_bin_init(GstRdmaSrcBin* self) {
    self->src = gst_element_factory_make("rdmasrc", "rdmasrc");
    g_signal_connect(self->src, "pad-added", G_CALLBACK(rdmastream::gst::srcbin::on_pad_added), self);
    g_signal_connect(self->src, "no-more-pads", G_CALLBACK(rdmastream::gst::srcbin::on_no_more_pads), self);
    gst_bin_add(GST_BIN(self), self->src); // the bin holds it from here
}
