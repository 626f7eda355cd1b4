// SPDX-License-Identifier: LGPL-2.1-or-later
// The machine's RDMA devices: listed in one place, with one message for
// "there is none here" (which carries the Soft-RoCE recipe) and one for "not
// that one" (which lists those there are).
#pragma once

#include <string>
#include <vector>

struct ibv_context; // verbs.h stays out of the public headers

namespace rdmastream {

// The names of this machine's RDMA devices ("rxe0", "mlx5_0"), as
// ibv_get_device_list gives them; empty when it has none. A failing
// ibv_get_device_list (no kernel support: ENOSYS) is none as well.
std::vector<std::string> device_names();

// What to tell the user when there is no usable RDMA device, with the
// recipe for one; `how` says how we learned it ("ibv_get_device_list found
// none", "rdma_create_event_channel: No such device").
std::string no_device_message(const std::string& how);

// Throws UserError unless this machine has the RDMA device `name` (empty:
// any device at all): no_device_message when it has none, else the names of
// those it has. Done once before connecting or listening, so that "no such
// device" is one clear line rather than an address-resolution failure.
void check_device_exists(const std::string& name);

// librdmacm's open context of device `name`, or, `name` empty, of the only
// device there is (several: UserError asking for a name or an address).
// The context stays open for the process (librdmacm keeps it). For a
// listener bound to every address, which has no device of its own.
ibv_context* find_cm_device(const std::string& name);

} // namespace rdmastream
