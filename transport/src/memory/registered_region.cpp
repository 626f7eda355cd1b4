// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/registered_region.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <fmt/format.h>

namespace rdmastream {

namespace {
std::size_t nonzero(std::size_t size) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    return size;
}

// The device's limits, queried rather than assumed (registration is the
// control path: one query per region is cheap).
ibv_device_attr device_limits(ibv_pd* pd, std::size_t size) {
    ibv_device_attr attr{};
    check_rc(ibv_query_device(pd->context, &attr), "ibv_query_device");
    if (size > attr.max_mr_size) {
        throw UserError(fmt::format("a {}-byte memory region exceeds RDMA device {}'s max_mr_size of {} bytes: use "
                                    "fewer or smaller slots",
                                    size, ibv_get_device_name(pd->context->device), attr.max_mr_size));
    }
    return attr;
}
} // namespace

RegisteredRegion::RegisteredRegion(ibv_pd* pd, std::size_t size, int access)
    : RegisteredRegion(pd, size, access, device_limits(pd, nonzero(size))) {}

RegisteredRegion::RegisteredRegion(ibv_pd* pd, std::size_t size, int access, const ibv_device_attr& attr)
    : map_(size) {
    check_memlock(map_.length());
    ibv_mr* mr = ibv_reg_mr(pd, map_.bytes().data(), size, access);
    if (mr == nullptr) {
        const int err = errno;
        // Running out of regions looks like any ENOMEM: name the limit.
        throw SystemError("ibv_reg_mr", err,
                          fmt::format("{} bytes; device {} allows {} memory regions in all, each connection uses 4 "
                                      "(a receiver with memory windows one more per slot)",
                                      size, ibv_get_device_name(pd->context->device), attr.max_mr));
    }
    mr_.reset(mr);
    lkey_ = mr->lkey;
    rkey_ = mr->rkey;
}

RegisteredRegion::RegisteredRegion(std::size_t size, std::uint32_t key, std::shared_ptr<void> registration)
    : map_(nonzero(size)), fabric_registration_(std::move(registration)), lkey_(key), rkey_(key) {}

} // namespace rdmastream
