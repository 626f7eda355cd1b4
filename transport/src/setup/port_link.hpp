// SPDX-License-Identifier: LGPL-2.1-or-later
// The network link under an RDMA port, for messages: a port that went down
// is named by the netdev a user can look at ("eth0"), not only by the
// device ("rxe0").
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

namespace rdmastream {

// "port 1 of rxe0 (link eth0)"; without "(link ...)" when the device has no
// netdev (InfiniBand) or its GID table does not say.
std::string describe_port(ibv_context* device, std::uint8_t port);

} // namespace rdmastream
