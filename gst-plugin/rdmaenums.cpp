// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmaenums.hpp"

namespace rdmastream::gst {

GType role_get_type() {
    static GType type = 0;
    if (g_once_init_enter(&type)) {
        static const GEnumValue values[] = {
            {static_cast<int>(Role::kListen), "Wait for the peer to connect to host:port", "listen"},
            {static_cast<int>(Role::kConnect), "Connect to the peer listening on host:port", "connect"},
            {0, nullptr, nullptr},
        };
        g_once_init_leave(&type, g_enum_register_static("GstRdmaRole", values));
    }
    return type;
}

GType send_policy_get_type() {
    static GType type = 0;
    if (g_once_init_enter(&type)) {
        static const GEnumValue values[] = {
            {static_cast<int>(SendPolicy::kLossless), "Wait for a free slot: every frame arrives (backpressure)",
             "lossless"},
            {static_cast<int>(SendPolicy::kLive),
             "Never wait: when the receiver is behind, drop the older pending frame", "live"},
            {0, nullptr, nullptr},
        };
        g_once_init_leave(&type, g_enum_register_static("GstRdmaPolicy", values));
    }
    return type;
}

GType poll_mode_get_type() {
    static GType type = 0;
    if (g_once_init_enter(&type)) {
        static const GEnumValue values[] = {
            {static_cast<int>(PollMode::kEvent), "Sleep until the NIC signals a completion (no idle CPU)", "event"},
            {static_cast<int>(PollMode::kBusy), "Spin on the completion queue: lowest latency, one core at 100 %",
             "busy"},
            {0, nullptr, nullptr},
        };
        g_once_init_leave(&type, g_enum_register_static("GstRdmaPollMode", values));
    }
    return type;
}

} // namespace rdmastream::gst
