// SPDX-License-Identifier: LGPL-2.1-or-later
// The properties rdmasink and rdmasrc share, in one place: their ids, the
// settings they write (ConnectionSettings), one installer, and the
// set_property / get_property both elements use. A property of one element
// only is an id from kFirstOwnProperty on, a Field in that element's table
// and its g_param_spec in its class_init.
#pragma once

#include "rdmaenums.hpp"
#include "rdmauri.hpp"

#include "rdmastream/door.hpp"
#include "rdmastream/endpoint.hpp"

#include <gst/gst.h>

#include <array>
#include <span>
#include <string>
#include <type_traits>

namespace rdmastream::gst {

enum SharedProperty : guint {
    PROP_HOST = 1,
    PROP_PORT,
    PROP_ROLE,
    PROP_CONNECT_TIMEOUT,
    PROP_TIMEOUT,
    PROP_DEVICE,
    PROP_POLL_MODE,
    PROP_KEY_FILE,
    PROP_ALLOW,
    PROP_MAX_PENDING,
    PROP_MAX_PENDING_PER_ADDRESS,
    PROP_STATS_INTERVAL,
    PROP_HOST_B, // two paths: path B's address (empty: one path)
    PROP_PORT_B,
    PROP_DEVICE_B,
    PROP_STATS, // read only, from the element's counters
    PROP_URI,   // sets and reads the others
    kFirstOwnProperty,
};

inline constexpr guint kDefaultConnectTimeoutMs = 10000;

// The values of the shared properties; read and written under the object
// lock. Each element's settings derive from it, with its own defaults.
struct ConnectionSettings {
    ConnectionSettings(Role default_role, guint default_timeout_ms)
        : role(default_role), timeout_ms(default_timeout_ms) {}

    std::string host;
    guint port = kDefaultPort;
    Role role;
    guint connect_timeout_ms = kDefaultConnectTimeoutMs;
    guint timeout_ms;
    std::string device;
    PollMode poll_mode = PollMode::kEvent;
    std::string key_file;        // empty: no authentication
    std::string allow;           // role=listen: "ADDR[/PREFIX],..."; empty: everyone
    // role=listen: peers on their way in at once, in all and from one
    // address (the transport's PendingLimits).
    guint max_pending = static_cast<guint>(PendingLimits{}.total);
    guint max_pending_per_address = static_cast<guint>(PendingLimits{}.per_address);
    guint stats_interval_ms = 0; // 0: no stats messages
    // Two paths (docs/gstreamer.md): path B's host, port (0: `port`) and
    // device; an empty host_b: one path.
    std::string host_b;
    guint port_b = 0;
    std::string device_b;
    guint path_b_port() const noexcept { return port_b != 0 ? port_b : port; }
};

// What the two elements say differently of a shared property: the peer is
// a receiver for one, a sender for the other. Static strings.
struct SharedPropertyTexts {
    const char* host;
    const char* role;
    const char* connect_timeout;
    const char* timeout;
    const char* allow;
    const char* stats;
};

// role=listen: the pending limits the settings ask for (Door::listen
// refuses a per-address one above the total, naming both).
PendingLimits pending_limits(const ConnectionSettings& s);

// Installs every shared property; `defaults` gives their default values.
void install_shared_properties(GObjectClass* klass, const SharedPropertyTexts& texts,
                               const ConnectionSettings& defaults);

// GValue <-> a settings field, by the field's type.
inline void from_value(std::string& f, const GValue* v) {
    const gchar* s = g_value_get_string(v);
    f = s != nullptr ? s : "";
}
inline void from_value(guint& f, const GValue* v) { f = g_value_get_uint(v); }
inline void from_value(guint64& f, const GValue* v) { f = g_value_get_uint64(v); }
inline void from_value(bool& f, const GValue* v) { f = g_value_get_boolean(v) != FALSE; }
template <class E>
    requires std::is_enum_v<E>
void from_value(E& f, const GValue* v) {
    f = static_cast<E>(g_value_get_enum(v));
}
inline void to_value(const std::string& f, GValue* v) { g_value_set_string(v, f.c_str()); }
inline void to_value(guint f, GValue* v) { g_value_set_uint(v, f); }
inline void to_value(guint64 f, GValue* v) { g_value_set_uint64(v, f); }
inline void to_value(bool f, GValue* v) { g_value_set_boolean(v, f ? TRUE : FALSE); }
template <class E>
    requires std::is_enum_v<E>
void to_value(E f, GValue* v) {
    g_value_set_enum(v, static_cast<int>(f));
}

// Property `id` is the settings field a Field was made from (field<&S::member>(id)).
template <class S>
struct Field {
    guint id;
    void (*set)(S&, const GValue*);
    void (*get)(const S&, GValue*);
};

template <auto Member>
struct FieldOf;
template <class S, class T, T S::*Member>
struct FieldOf<Member> {
    static constexpr Field<S> make(guint id) {
        return {id, [](S& s, const GValue* v) { from_value(s.*Member, v); },
                [](const S& s, GValue* v) { to_value(s.*Member, v); }};
    }
};
template <auto Member>
constexpr auto field(guint id) {
    return FieldOf<Member>::make(id);
}

// The shared properties' fields (rdmaprops.cpp).
std::span<const Field<ConnectionSettings>> shared_fields();

template <class Fields>
const typename Fields::value_type* find_field(const Fields& fields, guint id) {
    for (const auto& f : fields) {
        if (f.id == id) {
            return &f;
        }
    }
    return nullptr;
}

// Under the object lock, `use(field, settings)` on the field that property
// `id` names: a shared one or one of `own`.
template <class S, std::size_t N, class Use>
void use_field(GObject* object, S& settings, const std::array<Field<S>, N>& own, guint id, GParamSpec* pspec,
               Use use) {
    const Field<ConnectionSettings>* shared = find_field(shared_fields(), id);
    const Field<S>* mine = shared != nullptr ? nullptr : find_field(own, id);
    GST_OBJECT_LOCK(object);
    if (shared != nullptr) {
        use(*shared, static_cast<ConnectionSettings&>(settings));
    } else if (mine != nullptr) {
        use(*mine, settings);
    }
    GST_OBJECT_UNLOCK(object);
    if (shared == nullptr && mine == nullptr) {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
    }
}

// An element's GObject set_property and get_property: `SettingsOf(object)`
// is the element's settings, `Fields` its own properties, `Stats` makes its
// stats structure (and takes the object lock itself). The URI sets and
// reads the other properties: not under the lock.
template <auto SettingsOf, const auto& Fields>
void set_property_vfunc(GObject* object, guint id, const GValue* value, GParamSpec* pspec) {
    if (id == PROP_URI) {
        set_uri_property(GST_ELEMENT(object), value);
        return;
    }
    use_field(object, SettingsOf(object), Fields, id, pspec, [value](const auto& f, auto& s) { f.set(s, value); });
}

template <auto SettingsOf, const auto& Fields, GstStructure* (*Stats)(GstElement*)>
void get_property_vfunc(GObject* object, guint id, GValue* value, GParamSpec* pspec) {
    if (id == PROP_URI) {
        g_value_take_string(value, element_uri(GST_ELEMENT(object)));
    } else if (id == PROP_STATS) {
        g_value_take_boxed(value, Stats(GST_ELEMENT(object)));
    } else {
        use_field(object, SettingsOf(object), Fields, id, pspec, [value](const auto& f, auto& s) { f.get(s, value); });
    }
}

} // namespace rdmastream::gst
