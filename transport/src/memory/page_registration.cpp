// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/page_registration.hpp"

#include "memory/registered_region.hpp"
#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <fmt/format.h>

namespace rdmastream {

namespace {
// An MR and the PD it is on, deregistered first (declared last).
struct PdRegion {
    std::shared_ptr<ibv_pd> pd;
    MemoryRegion mr;
};
} // namespace

PageRegistration register_pages(std::shared_ptr<ibv_pd> pd, std::span<std::byte> pages, std::size_t locked,
                                int access) {
    if (pages.empty()) {
        throw UserError("cannot register an empty memory region");
    }
    // The device's limits, queried rather than assumed (registration is the
    // control path: one query per region is cheap).
    ibv_device_attr attr{};
    check_rc(ibv_query_device(pd->context, &attr), "ibv_query_device");
    if (pages.size() > attr.max_mr_size) {
        throw UserError(fmt::format("a {}-byte memory region exceeds RDMA device {}'s max_mr_size of {} bytes: use "
                                    "fewer or smaller slots",
                                    pages.size(), ibv_get_device_name(pd->context->device), attr.max_mr_size));
    }
    check_memlock(locked);
    ibv_mr* mr = ibv_reg_mr(pd.get(), pages.data(), pages.size(), access);
    if (mr == nullptr) {
        const int err = errno;
        // Running out of regions looks like any ENOMEM: name the limit.
        throw SystemError("ibv_reg_mr", err,
                          fmt::format("{} bytes; device {} allows {} memory regions in all, each connection uses 4 "
                                      "(a receiver with memory windows one more per slot)",
                                      pages.size(), ibv_get_device_name(pd->context->device), attr.max_mr));
    }
    MemoryRegion region(mr); // owned before anything else may throw
    const std::uint32_t lkey = mr->lkey, rkey = mr->rkey;
    return PageRegistration{lkey, rkey, std::make_shared<PdRegion>(PdRegion{std::move(pd), std::move(region)})};
}

} // namespace rdmastream
