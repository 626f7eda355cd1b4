// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmakey.hpp"

namespace rdmastream::gst {

std::shared_ptr<const PresharedKey> load_key_file(GstElement* element, const std::string& path) {
    if (path.empty()) {
        return nullptr;
    }
    return PresharedKey::from_file(path, [element](const std::string& w) {
        GST_ELEMENT_WARNING(element, RESOURCE, SETTINGS, ("Key file open to others"), ("%s", w.c_str()));
    });
}

} // namespace rdmastream::gst
