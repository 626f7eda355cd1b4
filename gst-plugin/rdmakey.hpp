// SPDX-License-Identifier: LGPL-2.1-or-later
// The key-file property's key (rdmaprops.cpp installs the property): a
// pre-shared key the peer must prove before the ring is shared
// (rdmastream/handshake.hpp).
#pragma once

#include "rdmastream/key.hpp"

#include <gst/gst.h>

#include <memory>
#include <string>

namespace rdmastream::gst {

// The key in `path` (null when empty). A file open to group or others posts
// a warning message on `element`; a bad file throws UserError naming it.
std::shared_ptr<const PresharedKey> load_key_file(GstElement* element, const std::string& path);

} // namespace rdmastream::gst
