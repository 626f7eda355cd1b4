// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmaprops.hpp"

#include <array>

namespace rdmastream::gst {
namespace {

using C = ConnectionSettings;
constexpr std::array<Field<C>, 15> kSharedFields = {
    field<&C::host>(PROP_HOST),
    field<&C::port>(PROP_PORT),
    field<&C::role>(PROP_ROLE),
    field<&C::connect_timeout_ms>(PROP_CONNECT_TIMEOUT),
    field<&C::timeout_ms>(PROP_TIMEOUT),
    field<&C::device>(PROP_DEVICE),
    field<&C::poll_mode>(PROP_POLL_MODE),
    field<&C::key_file>(PROP_KEY_FILE),
    field<&C::allow>(PROP_ALLOW),
    field<&C::max_pending>(PROP_MAX_PENDING),
    field<&C::max_pending_per_address>(PROP_MAX_PENDING_PER_ADDRESS),
    field<&C::stats_interval_ms>(PROP_STATS_INTERVAL),
    field<&C::host_b>(PROP_HOST_B),
    field<&C::port_b>(PROP_PORT_B),
    field<&C::device_b>(PROP_DEVICE_B),
};

void install(GObjectClass* klass, guint id, GParamSpec* spec) {
    g_object_class_install_property(klass, id, spec);
}

} // namespace

void install_shared_properties(GObjectClass* klass, const SharedPropertyTexts& t, const ConnectionSettings& d) {
    const auto rw = static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
    install(klass, PROP_HOST, g_param_spec_string("host", "Host", t.host, d.host.c_str(), rw));
    install(klass, PROP_PORT,
            g_param_spec_uint("port", "Port", "The rdma_cm port (TCP port space)", 1, 65535, d.port, rw));
    install(klass, PROP_ROLE, g_param_spec_enum("role", "Role", t.role, role_get_type(), static_cast<int>(d.role), rw));
    install(klass, PROP_CONNECT_TIMEOUT, g_param_spec_uint("connect-timeout", "Connect timeout", t.connect_timeout, 0,
                                                           G_MAXUINT, d.connect_timeout_ms, rw));
    install(klass, PROP_TIMEOUT, g_param_spec_uint("timeout", "Timeout", t.timeout, 1, G_MAXUINT, d.timeout_ms, rw));
    install(klass, PROP_DEVICE,
            g_param_spec_string("device", "Device",
                                "RDMA device to use (e.g. mlx5_0, rxe0), checked against the route to the peer; "
                                "empty: the device the route to host goes through",
                                d.device.c_str(), rw));
    install(klass, PROP_HOST_B,
            g_param_spec_string("host-b", "Host of path B",
                                "Two paths: path B's address (role=connect: the peer's on the second network; "
                                "role=listen: ours there). Every frame goes over both paths, and a path that dies "
                                "costs no frame. Empty: one path",
                                d.host_b.c_str(), rw));
    install(klass, PROP_PORT_B,
            g_param_spec_uint("port-b", "Port of path B", "Two paths: path B's rdma_cm port; 0: the port property's",
                              0, 65535, d.port_b, rw));
    install(klass, PROP_DEVICE_B,
            g_param_spec_string("device-b", "Device of path B",
                                "Two paths: the RDMA device path B must use; empty: the one its route goes through",
                                d.device_b.c_str(), rw));
    install(klass, PROP_POLL_MODE,
            g_param_spec_enum("poll-mode", "Poll mode",
                              "How to wait for the NIC: event sleeps until a completion arrives, busy spins on the "
                              "completion queue for the lowest latency at the cost of a core",
                              poll_mode_get_type(), static_cast<int>(d.poll_mode), rw));
    install(klass, PROP_KEY_FILE,
            g_param_spec_string("key-file", "Key file",
                                "authenticate with the pre-shared key in this file (32 to 1024 bytes, e.g. `head -c "
                                "32 /dev/urandom > FILE`, mode 600): both ends prove they hold it before the ring is "
                                "shared, and a peer without it is refused; empty: no authentication",
                                d.key_file.c_str(), rw));
    install(klass, PROP_ALLOW, g_param_spec_string("allow", "Allow", t.allow, d.allow.c_str(), rw));
    install(klass, PROP_MAX_PENDING,
            g_param_spec_uint("max-pending", "Max pending",
                              "role=listen: peers taken through their handshakes at once; each has 5 s to complete "
                              "its connect request and then the handshake timeout, so requests that never complete "
                              "(a flood) tie up at most this many while a genuine peer is served",
                              1, 4096, d.max_pending, rw));
    install(klass, PROP_MAX_PENDING_PER_ADDRESS,
            g_param_spec_uint("max-pending-per-address", "Max pending per address",
                              "role=listen: of those, at most this many from one peer address; its next request "
                              "drops its oldest one not yet connected, or is refused busy",
                              1, 4096, d.max_pending_per_address, rw));
    install(klass, PROP_STATS,
            g_param_spec_boxed("stats", "Statistics", t.stats, GST_TYPE_STRUCTURE,
                               static_cast<GParamFlags>(G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));
    install(klass, PROP_STATS_INTERVAL,
            g_param_spec_uint("stats-interval", "Stats interval",
                              "Milliseconds between element messages on the bus carrying the stats property's "
                              "counters (the same structure), from start to stop; 0: none",
                              0, 3600000, d.stats_interval_ms, rw));
    install_uri_property(klass, PROP_URI);
    gst_type_mark_as_plugin_api(role_get_type(), static_cast<GstPluginAPIFlags>(0));
    gst_type_mark_as_plugin_api(poll_mode_get_type(), static_cast<GstPluginAPIFlags>(0));
}

PendingLimits pending_limits(const ConnectionSettings& s) {
    return PendingLimits{s.max_pending, s.max_pending_per_address}; // Door::listen checks them
}

std::span<const Field<ConnectionSettings>> shared_fields() {
    return kSharedFields;
}

} // namespace rdmastream::gst
