#include "rdmakey.hpp"

namespace rdmastream::gst {

void install_key_file_property(GObjectClass* klass, guint id, GParamFlags flags) {
    g_object_class_install_property(
        klass, id,
        g_param_spec_string("key-file", "Key file",
                            "authenticate with the pre-shared key in this file (32 to 1024 bytes, e.g. `head -c 32 "
                            "/dev/urandom > FILE`, mode 600): both ends prove they hold it before the ring is "
                            "shared, and a peer without it is refused; empty: no authentication",
                            "", flags));
}

std::shared_ptr<const PresharedKey> load_key_file(GstElement* element, const std::string& path) {
    if (path.empty()) {
        return nullptr;
    }
    return PresharedKey::from_file(path, [element](const std::string& w) {
        GST_ELEMENT_WARNING(element, RESOURCE, SETTINGS, ("Key file open to others"), ("%s", w.c_str()));
    });
}

} // namespace rdmastream::gst
