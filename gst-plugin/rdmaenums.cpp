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

void install_device_property(GObjectClass* klass, guint id, GParamFlags flags) {
    g_object_class_install_property(
        klass, id,
        g_param_spec_string("device", "Device",
                            "RDMA device to use (e.g. mlx5_0, rxe0), checked against the route to the peer; empty: "
                            "the device the route to host goes through",
                            "", flags));
}

void install_poll_mode_property(GObjectClass* klass, guint id, GParamFlags flags) {
    g_object_class_install_property(
        klass, id,
        g_param_spec_enum("poll-mode", "Poll mode",
                          "How to wait for the NIC: event sleeps until a completion arrives, busy spins on the "
                          "completion queue for the lowest latency at the cost of a core",
                          poll_mode_get_type(), static_cast<int>(PollMode::kEvent), flags));
}

void install_stats_interval_property(GObjectClass* klass, guint id, GParamFlags flags) {
    g_object_class_install_property(
        klass, id,
        g_param_spec_uint("stats-interval", "Stats interval",
                          "Milliseconds between element messages on the bus carrying the stats property's counters "
                          "(the same structure), from start to stop; 0: none",
                          0, 3600000, 0, flags));
}

} // namespace rdmastream::gst
