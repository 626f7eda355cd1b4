// SPDX-License-Identifier: LGPL-2.1-or-later
// rdma:// URIs for rdmasrc and rdmasink (their GstURIHandler and "uri"
// property): rdma://HOST[:PORT][?PROPERTY=VALUE&...], the query naming the
// element's own properties. Without role=, a wildcard host (0.0.0.0, [::])
// listens on every address and any other host is the peer to dial, for
// either element. docs/gstreamer.md ("URIs") is the user's side.
#pragma once

#include <gst/gst.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rdmastream::gst {

inline constexpr const char* kUriScheme = "rdma";

// A URI the syntax refuses; what() says what is wrong and how to write it.
class UriError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The parts of an rdma:// URI, syntax only: nothing checked against an
// element yet. Parameters are percent-decoded, in the URI's order.
struct RdmaUri {
    std::string host;          // without the brackets of an IPv6 literal
    std::optional<guint> port; // absent: the element's default port
    std::vector<std::pair<std::string, std::string>> params;
};

// Throws UriError: another scheme, no host, a bad port, a path or fragment,
// a parameter without a value or given twice, a bad percent escape.
RdmaUri parse_rdma_uri(std::string_view text);

// 0.0.0.0 or :: (every local address): such a URI listens.
bool is_wildcard_host(std::string_view host);

// Sets `element`'s host, port, role and every query parameter from `uri`,
// all or nothing: each parameter is checked first against the element's own
// writable properties (name, then value and range). FALSE with `error`
// (GST_URI_ERROR) naming the problem otherwise, the element unchanged.
gboolean set_element_uri(GstElement* element, const gchar* uri, GError** error);

// The URI of `element`'s current settings: host and port, role= only when
// the host alone would say otherwise, and every other property that is not
// at its default. Null when there is nothing to name (role=connect without
// a host). g_free() it.
gchar* element_uri(GstElement* element);

// GstURIHandler's interface for an element of `type` (G_IMPLEMENT_INTERFACE's
// init function): one scheme, and the two functions above.
template <GstURIType type>
void uri_handler_init(gpointer g_iface, gpointer) {
    auto* iface = static_cast<GstURIHandlerInterface*>(g_iface);
    iface->get_type = [](GType) { return type; };
    iface->get_protocols = [](GType) -> const gchar* const* {
        static const gchar* const protocols[] = {kUriScheme, nullptr};
        return protocols;
    };
    iface->get_uri = [](GstURIHandler* h) { return element_uri(GST_ELEMENT(h)); };
    iface->set_uri = [](GstURIHandler* h, const gchar* uri, GError** error) {
        return set_element_uri(GST_ELEMENT(h), uri, error);
    };
}

// The "uri" property both elements have; set and get go through the two
// functions above (a refused URI is a g_warning: set_property has no error).
void install_uri_property(GObjectClass* klass, guint id);
// set_property's side of it: set_element_uri, a refusal as a g_warning.
void set_uri_property(GstElement* element, const GValue* value);

} // namespace rdmastream::gst
