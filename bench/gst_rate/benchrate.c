/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The "benchrate" GStreamer tracer (plugin libgstbenchrate.so): how fast
 * buffers reach the sinks of a pipeline, without changing the pipeline.
 *
 *   GST_PLUGIN_PATH=DIR GST_TRACERS=benchrate BENCHRATE_OUT=rate.jsonl \
 *     gst-launch-1.0 rdmasrc ! fakesink
 *
 * It watches every buffer pushed into a pad whose element is a GstBaseSink
 * and notes the time (the tracer clock: monotonic, ns) of the first and the
 * last one. When EOS reaches a sink it appends one JSON line to BENCHRATE_OUT
 * (stderr when unset):
 *
 *   {"buffers":N,"bytes":B,"seconds":S,"gbps":G}
 *
 * S runs from the first buffer to the last; G counts the bytes after the
 * first buffer over S (the first buffer starts the clock). Connecting,
 * negotiating and pre-rolling are thereby left out, for any source: rdmasrc
 * and tcpserversrc are measured the same way. Buffer lists are counted too.
 * One streaming thread per sink is assumed (counters are not locked), which
 * is what bench/paths.sh runs.
 */
#include <gst/base/gstbasesink.h>
#include <gst/gst.h>
#include <gst/gsttracer.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    GstTracer parent;
    guint64 buffers, bytes, first_bytes;
    GstClockTime first, last;
    gboolean reported;
} BenchRate;

typedef struct {
    GstTracerClass parent_class;
} BenchRateClass;

G_DEFINE_TYPE(BenchRate, bench_rate, GST_TYPE_TRACER)

/* Does PAD push into a sink? No locking: the pipelines measured are not
 * relinked while they run. */
static gboolean into_sink(GstPad* pad) {
    GstPad* peer = GST_PAD_PEER(pad);
    if (peer == NULL) return FALSE;
    GstObject* parent = GST_OBJECT_PARENT(peer);
    return parent != NULL && GST_IS_BASE_SINK(parent);
}

static void count(BenchRate* self, GstClockTime ts, gsize size) {
    if (self->buffers == 0) {
        self->first = ts;
        self->first_bytes = size;
    }
    self->last = ts;
    self->buffers++;
    self->bytes += size;
}

static void on_push(GObject* obj, GstClockTime ts, GstPad* pad, GstBuffer* buffer) {
    if (into_sink(pad)) count((BenchRate*)obj, ts, gst_buffer_get_size(buffer));
}

static void on_push_list(GObject* obj, GstClockTime ts, GstPad* pad, GstBufferList* list) {
    if (into_sink(pad)) count((BenchRate*)obj, ts, gst_buffer_list_calculate_size(list));
}

static void on_event(GObject* obj, GstClockTime ts, GstPad* pad, GstEvent* event) {
    (void)ts;
    BenchRate* self = (BenchRate*)obj;
    if (GST_EVENT_TYPE(event) != GST_EVENT_EOS || self->reported || !into_sink(pad)) return;
    self->reported = TRUE;
    const double secs = self->buffers > 1 ? (double)(self->last - self->first) / 1e9 : 0.0;
    const double gbps = secs > 0 ? (double)(self->bytes - self->first_bytes) * 8 / secs / 1e9 : 0.0;
    char line[256];
    const int n = snprintf(line, sizeof line, "{\"buffers\":%" G_GUINT64_FORMAT ",\"bytes\":%" G_GUINT64_FORMAT
                           ",\"seconds\":%.6f,\"gbps\":%.6f}\n",
                           self->buffers, self->bytes, secs, gbps);
    const char* path = getenv("BENCHRATE_OUT");
    const int fd = path != NULL ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
    if (fd < 0) {
        g_printerr("benchrate: cannot open BENCHRATE_OUT=%s for appending\n", path);
        return;
    }
    if (write(fd, line, (size_t)n) != n) g_printerr("benchrate: cannot write to %s\n", path ? path : "stderr");
    if (fd != 2) close(fd);
}

static void bench_rate_class_init(BenchRateClass* klass) { (void)klass; }

static void bench_rate_init(BenchRate* self) {
    GstTracer* t = GST_TRACER(self);
    gst_tracing_register_hook(t, "pad-push-pre", G_CALLBACK(on_push));
    gst_tracing_register_hook(t, "pad-push-list-pre", G_CALLBACK(on_push_list));
    gst_tracing_register_hook(t, "pad-push-event-pre", G_CALLBACK(on_event));
}

static gboolean plugin_init(GstPlugin* plugin) {
    return gst_tracer_register(plugin, "benchrate", bench_rate_get_type());
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, benchrate,
                  "Rate of buffers into sinks, first to last (rdmastream's bench)", plugin_init, VERSION, "LGPL",
                  PACKAGE, GST_PACKAGE_ORIGIN)
