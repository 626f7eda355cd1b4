#include "rdmastream_cli/rdma_device.hpp"

#include "rdmastream/error.hpp"

#include <infiniband/verbs.h>

#include <fmt/format.h>

#include <memory>

namespace rdmastream::cli {
namespace {
struct DeviceListDeleter {
    void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};
} // namespace

void require_rdma_device(const std::string& wanted) {
    int n = 0;
    const std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
    std::string names;
    for (int i = 0; list && i < n; ++i) {
        const std::string name = ibv_get_device_name(list.get()[i]);
        if (wanted.empty() || name == wanted) return;
        names += (names.empty() ? "" : ", ") + name;
    }
    if (names.empty()) {
        throw UserError("no RDMA device on this machine (ibv_get_device_list found none): load a NIC driver, or "
                        "set up Soft-RoCE with `rdma link add rxe0 type rxe netdev IFACE` (docs/softroce.md)");
    }
    throw UserError(fmt::format("no RDMA device named {}: this machine has {} (see `ibv_devices`)", wanted, names));
}

} // namespace rdmastream::cli
