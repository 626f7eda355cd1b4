// The RDMA device check both programs do before any rdma_cm call, so "no
// device" is one clear line instead of an address-resolution failure.
#pragma once

#include <string>

namespace rdmastream::cli {

// `wanted` empty: any device will do. Throws UserError naming the devices
// there are (or that there are none, and how to get Soft-RoCE).
void require_rdma_device(const std::string& wanted);

} // namespace rdmastream::cli
