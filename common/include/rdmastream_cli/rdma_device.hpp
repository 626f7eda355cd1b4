// SPDX-License-Identifier: LGPL-2.1-or-later
// The RDMA device check both programs do before any rdma_cm call, so "no
// device" is one clear line instead of an address-resolution failure. The
// listing and its messages live in transport/ (devices.hpp), shared with
// the library's own checks and the GStreamer elements.
#pragma once

#include "rdmastream/devices.hpp"

#include <string>

namespace rdmastream::cli {

// `wanted` empty: any device will do. Throws UserError naming the devices
// there are (or that there are none, and how to get Soft-RoCE).
inline void require_rdma_device(const std::string& wanted) { check_device_exists(wanted); }

} // namespace rdmastream::cli
