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

// Lets librdmacm close the context of a device that was removed, once no
// rdma_cm_id of this process is on it: librdmacm closes one only when it
// next looks at the device list, and a kernel that cannot take a device's
// resources back by itself (rxe) waits, without end, for that close before
// the device can go (or a device of its name come back). Call it once
// nothing of ours is left on the device (its protection domains and memory
// registrations gone first: the close would pull the context from under
// them). Costs a walk of sysfs: for a path redialling, not per frame.
void close_removed_cm_devices() noexcept;

} // namespace rdmastream
