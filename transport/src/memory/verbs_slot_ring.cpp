// SPDX-License-Identifier: LGPL-2.1-or-later
// SlotRing over verbs: the regions (and windows) on the connection's PD.
#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "memory/registered_region.hpp"
#include "memory/slot_ring.hpp"
#include "setup/verbs_owners.hpp"

#include <fmt/format.h>

#include <memory>

namespace rdmastream {

namespace {

class VerbsSlotRing final : public SlotRing {
public:
    VerbsSlotRing(ibv_pd* pd, std::uint32_t slot_count, std::uint32_t slot_size, bool windows)
        : SlotRing(slot_count, slot_size) {
        ibv_device_attr attr{};
        check_rc(ibv_query_device(pd->context, &attr), "ibv_query_device");
        const char* device = ibv_get_device_name(pd->context->device);
        const std::size_t region_size = windows ? slot_size : std::size_t{slot_count} * slot_size;
        if (region_size > attr.max_mr_size) {
            throw UserError(fmt::format("a {}-byte memory region exceeds RDMA device {}'s max_mr_size of {} bytes: "
                                        "use fewer or smaller slots",
                                        region_size, device, attr.max_mr_size));
        }
        check_memlock(pages_.length());
        const int access = windows ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND
                                   : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        const std::uint32_t regions = windows ? slot_count : 1;
        mrs_.reserve(regions);
        for (std::uint32_t i = 0; i < regions; ++i) {
            ibv_mr* mr = ibv_reg_mr(pd, slot(i).data(), region_size, access);
            if (mr == nullptr) {
                const int err = errno;
                // Running out of regions looks like any ENOMEM: name the limit.
                throw SystemError("ibv_reg_mr", err,
                                  fmt::format("slot {} of {}, {} bytes; device {} allows {} memory regions in all, a "
                                              "ring with memory windows uses one per slot",
                                              i, slot_count, region_size, device, attr.max_mr));
            }
            mrs_.emplace_back(mr);
            regions_.push_back(mr);
        }
        if (!windows) {
            return;
        }
        mws_.reserve(slot_count);
        for (std::uint32_t i = 0; i < slot_count; ++i) {
            ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
            if (mw == nullptr) {
                const int err = errno;
                throw SystemError("ibv_alloc_mw(IBV_MW_TYPE_2)", err,
                                  fmt::format("slot {} of {}; device {} allows {} memory windows in all", i,
                                              slot_count, device, attr.max_mw));
            }
            mws_.emplace_back(mw);
            windows_.push_back(mw);
        }
    }

private:
    // Windows after regions: they go first (a bound window keeps its
    // region, and its QP, in use), then the regions, then the base's pages.
    std::vector<MemoryRegion> mrs_;
    std::vector<MemoryWindow> mws_;
};

} // namespace

std::unique_ptr<SlotRing> register_verbs_ring(ibv_pd* pd, std::uint32_t slot_count, std::uint32_t slot_size,
                                              bool windows) {
    return std::make_unique<VerbsSlotRing>(pd, slot_count, slot_size, windows);
}

} // namespace rdmastream
