// SPDX-License-Identifier: LGPL-2.1-or-later
// Property types both elements share, and the debug categories.
#pragma once

#include "rdmastream/policy.hpp"

#include <gst/gst.h>

namespace rdmastream::gst {

// Which side opens the connection. The data direction does not depend on it:
// either element can listen or dial.
enum class Role : int { kListen = 0, kConnect = 1 };
GType role_get_type();

// What rdmasink does when the receiver holds every slot (transport Policy).
enum class SendPolicy : int { kLossless = 0, kLive = 1 };
GType send_policy_get_type();

// How the transport waits for completions (its PollMode).
GType poll_mode_get_type();

} // namespace rdmastream::gst

GST_DEBUG_CATEGORY_EXTERN(gst_rdma_sink_debug);
GST_DEBUG_CATEGORY_EXTERN(gst_rdma_src_debug);
