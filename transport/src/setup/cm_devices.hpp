// SPDX-License-Identifier: LGPL-2.1-or-later
// The device a listener bound to every address works on (devices.hpp lists
// the machine's devices for everyone; this is the library's own).
#pragma once

#include <rdma/rdma_cma.h>

#include <string>

namespace rdmastream {

// librdmacm's open context of device `name`, or, `name` empty, of the only
// device there is (several: UserError asking for a name or an address).
// The context stays open for the process (librdmacm keeps it). For a
// listener bound to every address, which has no device of its own.
ibv_context* find_cm_device(const std::string& name);

} // namespace rdmastream
