// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasrcbin: rdmasrc in a bin whose pads are all sometimes pads, one per
// flow ("src_0" the picture, "src_N" the others), added at the stream's
// first frame, then no-more-pads. It is what rdma:// URIs make (ranked above
// rdmasrc), because uridecodebin, and so playbin and gst-play-1.0, follows
// the pads a source adds only when it has no pad to begin with; rdmasrc's
// always pad "src" (basesrc's) would hide the sound. rtspsrc is a bin for
// the same reason.
//
// Its properties are rdmasrc's, each passed on to the rdmasrc inside.
#pragma once

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_RDMA_SRC_BIN (gst_rdma_src_bin_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaSrcBin, gst_rdma_src_bin, GST, RDMA_SRC_BIN, GstBin)
GST_ELEMENT_REGISTER_DECLARE(rdmasrcbin);

G_END_DECLS
