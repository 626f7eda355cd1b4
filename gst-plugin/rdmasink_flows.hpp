// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasink's request pads "sink_N": a programme's flows after the first
// (its sound), flow N of the stream, on the stream's one clock. The always
// pad "sink" (basesink's) carries flow 0, the picture.
//
// Every flow's format goes out before the stream's first frame (rdmasrc
// makes its pads at that frame, docs/protocol.md "Flows"): the first frame
// of any flow waits until every pad has its caps or has ended (the
// timeout property bounds the wait), then announces them all. The stream
// ends once every pad had its EOS. A flow's buffers are copied into
// registered staging memory of its own (an audio buffer is a few
// kilobytes) and sent with their pts; nothing waits for the clock (the
// receiver paces, as on "sink").
//
// Everything here runs under SinkDriver::mutex, on the pad's streaming
// thread or basesink's.
#pragma once

#include <gst/gst.h>

#include <mutex>

struct _GstRdmaSink;

namespace rdmastream::gst {

struct SinkState;

// GstElementClass::request_new_pad and release_pad.
GstPad* request_flow_pad(GstElement* element, GstPadTemplate* templ, const gchar* name, const GstCaps* caps);
void release_flow_pad(GstElement* element, GstPad* pad);

// Before the stream's first frame, from any flow: waits until flow 0 and
// every request pad have caps (or ended), then announces them all. True
// at once when that was done; false when flushing, or with an element
// error when the wait timed out (naming the pads still without caps).
bool flows_announced(_GstRdmaSink* self, std::unique_lock<std::mutex>& lock, SinkState& st);

// At flow 0's EOS: waits until every request pad had its EOS too (or the
// element is flushing: false).
bool flows_ended(_GstRdmaSink* self, std::unique_lock<std::mutex>& lock);

// unlock(): a wait above returns.
void wake_flow_waits(_GstRdmaSink* self);

} // namespace rdmastream::gst
