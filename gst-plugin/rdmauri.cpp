// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmauri.hpp"

#include "rdmastream/endpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

namespace rdmastream::gst {

namespace {

// Properties the authority sets, or that name the URI itself: never a parameter.
bool in_authority(std::string_view name) { return name == "host" || name == "port" || name == "uri"; }

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return g_ascii_tolower(c); });
    return out;
}

std::string unescape(std::string_view part, std::string_view uri) {
    const std::string text(part);
    std::unique_ptr<gchar, decltype(&g_free)> plain(g_uri_unescape_string(text.c_str(), nullptr), g_free);
    if (!plain) {
        throw UriError(fmt::format("bad percent escape in '{}' in {}", text, uri));
    }
    return plain.get();
}

guint parse_port(std::string_view text, std::string_view uri) {
    const std::optional<std::uint16_t> value = port_number(text);
    if (!value || *value == 0) {
        throw UriError(fmt::format("bad port '{}' in {}: a port is a number from 1 to 65535", text, uri));
    }
    return *value;
}

// The element's own writable properties: what a query may set.
std::vector<GParamSpec*> settable(GstElement* element) {
    guint n = 0;
    GParamSpec** all = g_object_class_list_properties(G_OBJECT_GET_CLASS(element), &n);
    std::vector<GParamSpec*> out;
    for (guint i = 0; i < n; ++i) {
        GParamSpec* p = all[i];
        if (p->owner_type == G_OBJECT_TYPE(element) && (p->flags & G_PARAM_WRITABLE) != 0 &&
            (p->flags & G_PARAM_CONSTRUCT_ONLY) == 0 && !in_authority(p->name)) {
            out.push_back(p);
        }
    }
    g_free(all);
    return out;
}

const char* factory_name(GstElement* element) {
    GstElementFactory* f = gst_element_get_factory(element);
    return f != nullptr ? GST_OBJECT_NAME(f) : G_OBJECT_TYPE_NAME(element);
}

std::string names_of(const std::vector<GParamSpec*>& specs) {
    std::string out;
    for (const GParamSpec* p : specs) {
        out += (out.empty() ? "" : ", ") + std::string(p->name);
    }
    return out;
}

// What a property accepts, for the message refusing a value.
std::string accepted(GParamSpec* p) {
    if (G_IS_PARAM_SPEC_UINT(p)) {
        const auto* u = G_PARAM_SPEC_UINT(p);
        return fmt::format("a number from {} to {}", u->minimum, u->maximum);
    }
    if (G_IS_PARAM_SPEC_UINT64(p)) {
        const auto* u = G_PARAM_SPEC_UINT64(p);
        return fmt::format("a number from {} to {}", u->minimum, u->maximum);
    }
    if (G_IS_PARAM_SPEC_BOOLEAN(p)) {
        return "true or false";
    }
    if (G_IS_PARAM_SPEC_ENUM(p)) {
        std::string nicks;
        const GEnumClass* e = G_PARAM_SPEC_ENUM(p)->enum_class;
        for (guint i = 0; i < e->n_values; ++i) {
            nicks += (i == 0 ? "" : i + 1 == e->n_values ? " or " : ", ") + std::string(e->values[i].value_nick);
        }
        return nicks;
    }
    return g_type_name(p->value_type);
}

// A property value as a URI parameter: enum nicks, plain strings, numbers.
std::string serialize(const GValue& v) {
    gchar* text = nullptr;
    if (G_VALUE_HOLDS_STRING(&v)) {
        text = g_strdup(g_value_get_string(&v) != nullptr ? g_value_get_string(&v) : "");
    } else if (G_VALUE_HOLDS_ENUM(&v)) {
        auto* klass = static_cast<GEnumClass*>(g_type_class_ref(G_VALUE_TYPE(&v)));
        const GEnumValue* e = g_enum_get_value(klass, g_value_get_enum(&v));
        text = g_strdup(e != nullptr ? e->value_nick : "");
        g_type_class_unref(klass);
    } else {
        text = gst_value_serialize(&v);
    }
    gchar* escaped = g_uri_escape_string(text != nullptr ? text : "", "/:,@", FALSE);
    std::string out = escaped;
    g_free(escaped);
    g_free(text);
    return out;
}

struct Value {
    GParamSpec* spec;
    GValue value;
};

} // namespace

RdmaUri parse_rdma_uri(std::string_view text) {
    const std::string_view prefix = "rdma://";
    if (text.size() < prefix.size() || lower(text.substr(0, prefix.size())) != prefix) {
        throw UriError(fmt::format("'{}' is not an rdma:// URI (rdma://HOST[:PORT][?PROPERTY=VALUE&...])", text));
    }
    std::string_view rest = text.substr(prefix.size());
    const std::size_t end_of_authority = std::min(rest.find_first_of("/?#"), rest.size());
    const std::string_view authority = rest.substr(0, end_of_authority);
    rest.remove_prefix(end_of_authority);

    RdmaUri uri;
    if (authority.find('@') != std::string_view::npos) {
        throw UriError(fmt::format("{} has a user name: an rdma:// URI has none (rdma://HOST[:PORT])", text));
    }
    const HostPort hp = split_host_port(authority);
    switch (hp.fault) {
    case HostPort::Fault::kNone: break;
    case HostPort::Fault::kUnclosedBracket:
        throw UriError(fmt::format("bad host in {}: an IPv6 address ends with ']' (rdma://[ADDR]:PORT)", text));
    case HostPort::Fault::kAfterBracket:
        throw UriError(fmt::format("bad host in {}: after ']' comes ':PORT' or nothing", text));
    }
    if (hp.bare_ipv6()) {
        throw UriError(fmt::format("bad host in {}: an IPv6 address goes in brackets (rdma://[ADDR]:PORT)", text));
    }
    const std::string_view host = hp.host;
    const std::optional<std::string_view> port = hp.port;
    if (host.empty()) {
        throw UriError(fmt::format("missing host in {}: rdma://0.0.0.0:PORT listens on every address, "
                                   "rdma://PEER:PORT dials PEER",
                                   text));
    }
    uri.host = unescape(host, text);
    if (port) {
        uri.port = parse_port(*port, text);
    }

    if (!rest.empty() && rest.front() == '/') {
        const std::size_t path_end = std::min(rest.find_first_of("?#"), rest.size());
        if (path_end > 1) {
            throw UriError(fmt::format("unexpected path '{}' in {}: an rdma:// URI has none "
                                       "(rdma://HOST[:PORT][?PROPERTY=VALUE&...])",
                                       rest.substr(0, path_end), text));
        }
        rest.remove_prefix(path_end);
    }
    if (!rest.empty() && rest.front() == '?') {
        const std::size_t query_end = std::min(rest.find('#'), rest.size());
        std::string_view query = rest.substr(1, query_end - 1);
        rest.remove_prefix(query_end);
        while (!query.empty()) {
            const std::size_t amp = std::min(query.find('&'), query.size());
            const std::string_view pair = query.substr(0, amp);
            query.remove_prefix(std::min(amp + 1, query.size()));
            if (pair.empty()) {
                continue; // "a=1&&b=2", a trailing '&'
            }
            const std::size_t eq = pair.find('=');
            const std::string key = unescape(pair.substr(0, eq), text);
            if (key.empty()) {
                throw UriError(fmt::format("a parameter without a name ('{}') in {}", pair, text));
            }
            if (eq == std::string_view::npos) {
                throw UriError(fmt::format("parameter '{}' has no value in {}: write {}=VALUE", key, text, key));
            }
            for (const auto& [k, v] : uri.params) {
                if (k == key) {
                    throw UriError(fmt::format("parameter '{}' is given twice in {}", key, text));
                }
            }
            uri.params.emplace_back(key, unescape(pair.substr(eq + 1), text));
        }
    }
    if (!rest.empty()) { // only a fragment is left
        throw UriError(fmt::format("unexpected fragment '{}' in {}", rest, text));
    }
    return uri;
}

bool is_wildcard_host(std::string_view host) {
    return host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0";
}

gboolean set_element_uri(GstElement* element, const gchar* text, GError** error) {
    GST_OBJECT_LOCK(element);
    const GstState state = GST_STATE(element);
    GST_OBJECT_UNLOCK(element);
    if (state > GST_STATE_READY) {
        g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_BAD_STATE,
                    "%s: the URI can only change in the NULL or READY state", GST_OBJECT_NAME(element));
        return FALSE;
    }
    std::vector<Value> values; // checked first, set only when all are good
    const auto unset_all = [&values] {
        for (Value& v : values) {
            g_value_unset(&v.value);
        }
    };
    try {
        const RdmaUri uri = parse_rdma_uri(text != nullptr ? text : "");
        const std::vector<GParamSpec*> specs = settable(element);
        bool role_given = false;
        for (const auto& [key, raw] : uri.params) {
            if (in_authority(key)) {
                throw UriError(fmt::format("parameter '{}' in {}: the {} goes in the URI itself "
                                           "(rdma://HOST[:PORT])",
                                           key, text, key == "uri" ? "URI" : key));
            }
            GParamSpec* spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), key.c_str());
            if (spec == nullptr || std::find(specs.begin(), specs.end(), spec) == specs.end()) {
                throw UriError(fmt::format("unknown parameter '{}' in {}: {} takes {}", key, text,
                                           factory_name(element), names_of(specs)));
            }
            role_given = role_given || std::string_view(spec->name) == "role";
            values.push_back(Value{spec, G_VALUE_INIT});
            GValue& value = values.back().value;
            g_value_init(&value, spec->value_type);
            const bool parsed = G_VALUE_HOLDS_STRING(&value)
                                    ? (g_value_set_string(&value, raw.c_str()), true)
                                    : gst_value_deserialize_with_pspec(&value, raw.c_str(), spec) != FALSE;
            // validate() is TRUE when it had to change the value: out of range.
            if (!parsed || g_param_value_validate(spec, &value)) {
                throw UriError(fmt::format("bad value '{}' for {} in {}: {} takes {}", raw, spec->name, text,
                                           spec->name, accepted(spec)));
            }
        }
        GObject* object = G_OBJECT(element);
        g_object_freeze_notify(object);
        if (!role_given && g_object_class_find_property(G_OBJECT_GET_CLASS(element), "role") != nullptr) {
            gst_util_set_object_arg(object, "role", is_wildcard_host(uri.host) ? "listen" : "connect");
        }
        g_object_set(object, "host", uri.host.c_str(), nullptr);
        if (uri.port) {
            g_object_set(object, "port", *uri.port, nullptr);
        } else {
            GParamSpec* port = g_object_class_find_property(G_OBJECT_GET_CLASS(element), "port");
            g_object_set(object, "port", G_PARAM_SPEC_UINT(port)->default_value, nullptr);
        }
        for (Value& v : values) {
            g_object_set_property(object, v.spec->name, &v.value);
        }
        g_object_thaw_notify(object);
        unset_all();
        return TRUE;
    } catch (const std::exception& e) {
        unset_all();
        g_set_error(error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI, "%s: %s", factory_name(element), e.what());
        return FALSE;
    }
}

gchar* element_uri(GstElement* element) {
    GObject* object = G_OBJECT(element);
    gchar* host_c = nullptr;
    guint port = 0;
    g_object_get(object, "host", &host_c, "port", &port, nullptr);
    std::string host = host_c != nullptr ? host_c : "";
    g_free(host_c);
    bool listen = false;
    if (GParamSpec* role_spec = g_object_class_find_property(G_OBJECT_GET_CLASS(element), "role")) {
        GValue role = G_VALUE_INIT;
        g_value_init(&role, role_spec->value_type);
        g_object_get_property(object, "role", &role);
        listen = serialize(role) == "listen";
        g_value_unset(&role);
    }
    if (host.empty()) {
        if (!listen) {
            return nullptr; // dialling nobody: no URI to give
        }
        host = "0.0.0.0"; // what an empty host binds first (getaddrinfo's passive IPv4 wildcard)
    }
    std::string uri = fmt::format("rdma://{}:{}", host.find(':') != std::string::npos ? "[" + host + "]" : host, port);
    std::string query;
    if (listen != is_wildcard_host(host)) {
        query += listen ? "role=listen" : "role=connect";
    }
    for (GParamSpec* spec : settable(element)) {
        if (std::string_view(spec->name) == "role") {
            continue;
        }
        GValue v = G_VALUE_INIT, d = G_VALUE_INIT;
        g_value_init(&v, spec->value_type);
        g_value_init(&d, spec->value_type);
        g_object_get_property(object, spec->name, &v);
        g_param_value_set_default(spec, &d);
        if (g_param_values_cmp(spec, &v, &d) != 0) {
            query += (query.empty() ? "" : "&") + std::string(spec->name) + "=" + serialize(v);
        }
        g_value_unset(&v);
        g_value_unset(&d);
    }
    if (!query.empty()) {
        uri += "?" + query;
    }
    return g_strdup(uri.c_str());
}

void install_uri_property(GObjectClass* klass, guint id) {
    g_object_class_install_property(
        klass, id,
        g_param_spec_string("uri", "URI",
                            "rdma://HOST[:PORT][?PROPERTY=VALUE&...]: host, port and any other property at once. "
                            "Without role=, a wildcard host (0.0.0.0, [::]) listens on every address and any other "
                            "host is the peer to dial",
                            nullptr,
                            static_cast<GParamFlags>(G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                                                     GST_PARAM_MUTABLE_READY)));
}

void set_uri_property(GstElement* element, const GValue* value) {
    GError* err = nullptr;
    if (!set_element_uri(element, g_value_get_string(value), &err)) {
        g_warning("%s", err->message);
        g_error_free(err);
    }
}

} // namespace rdmastream::gst
