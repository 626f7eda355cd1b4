// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/port_link.hpp"

#include <net/if.h>

#include <fmt/format.h>

namespace rdmastream {

std::string describe_port(ibv_context* device, std::uint8_t port) {
    std::string text = fmt::format("port {} of {}", port, ibv_get_device_name(device->device));
    // RoCE GIDs name their netdev; every GID of a port normally shares one
    // (VLANs aside), so the first that names one will do. Only called when
    // a port changes state: the queries are not on any per-frame path.
    ibv_port_attr attr{};
    if (ibv_query_port(device, port, &attr) != 0) {
        return text;
    }
    for (int index = 0; index < attr.gid_tbl_len && index < 16; ++index) {
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(device, port, static_cast<std::uint32_t>(index), &entry, 0) != 0 ||
            entry.ndev_ifindex == 0) {
            continue;
        }
        char name[IF_NAMESIZE] = {};
        if (if_indextoname(entry.ndev_ifindex, name) != nullptr) {
            return text + fmt::format(" (link {})", name);
        }
    }
    return text;
}

} // namespace rdmastream
