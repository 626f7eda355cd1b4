// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/devices.hpp"
#include "setup/cm_devices.hpp"

#include "rdmastream/error.hpp"

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace rdmastream {

namespace {
struct DeviceListDeleter {
    void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};
struct CmDeviceListDeleter {
    void operator()(ibv_context** list) const noexcept { rdma_free_devices(list); }
};

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

UserError no_such_device(const std::string& name, const std::vector<std::string>& names) {
    return UserError(fmt::format("there is no RDMA device {}; this machine has: {}", name, joined(names)));
}
} // namespace

namespace {
// The names, and in `how` why there are none when so.
std::vector<std::string> list_devices(std::string& how) {
    int n = 0;
    errno = 0;
    const std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
    if (!list) {
        how = fmt::format("ibv_get_device_list failed: {}", std::strerror(errno));
        return {};
    }
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
        names.emplace_back(ibv_get_device_name(list.get()[i]));
    }
    if (names.empty()) how = "ibv_get_device_list found none";
    return names;
}
} // namespace

std::vector<std::string> device_names() {
    std::string how;
    return list_devices(how);
}

std::string no_device_message(const std::string& how) {
    return fmt::format("no RDMA device on this machine ({}): load a NIC driver, or set up Soft-RoCE with "
                       "`modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE` (docs/softroce.md has "
                       "real NICs and the QEMU test bed)",
                       how);
}

void check_device_exists(const std::string& name) {
    std::string how;
    const std::vector<std::string> names = list_devices(how);
    if (names.empty()) {
        throw UserError(no_device_message(how));
    }
    for (const std::string& n : names) {
        if (name.empty() || n == name) return;
    }
    throw no_such_device(name, names);
}

ibv_context* find_cm_device(const std::string& name) {
    int n = 0;
    // rdma_get_devices, not ibv_get_device_list: its contexts are the ones
    // rdma_cm ids use, so a PD allocated on one serves their QPs.
    const std::unique_ptr<ibv_context*, CmDeviceListDeleter> list(rdma_get_devices(&n));
    if (!list || n == 0) {
        throw UserError(no_device_message("rdma_get_devices found none"));
    }
    ibv_context* pick = nullptr;
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) {
        names.emplace_back(ibv_get_device_name(list.get()[i]->device));
        if (name.empty() ? n == 1 : name == names.back()) pick = list.get()[i];
    }
    if (pick == nullptr && !name.empty()) {
        throw no_such_device(name, names);
    }
    if (pick == nullptr) {
        throw UserError(fmt::format("several RDMA devices ({}): listen on an address of one, or name the device",
                                    joined(names)));
    }
    return pick; // rdma_free_devices frees the list only: librdmacm keeps the contexts open
}

void close_removed_cm_devices() noexcept {
    // rdma_get_devices re-reads the device list, marking the ones gone; the
    // free drops its hold, and librdmacm closes a gone one nobody holds.
    if (ibv_context** list = rdma_get_devices(nullptr)) rdma_free_devices(list);
}

} // namespace rdmastream
