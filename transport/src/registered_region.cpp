#include "rdmastream/registered_region.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <sys/mman.h>

#include <cstdio>

namespace rdmastream {

namespace {
constexpr std::size_t kHugePage = 2u << 20;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
} // namespace

void RegisteredRegion::Unmap::operator()(void* p) const noexcept {
    if (munmap(p, length) != 0) {
        std::perror("rdmastream: munmap");
    }
}

RegisteredRegion::RegisteredRegion(ibv_pd* pd, std::size_t size, int access)
    : size_(size), map_(nullptr, Unmap{0}) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    // The device's limits, queried rather than assumed (registration is the
    // control path: one query per region is cheap).
    ibv_device_attr attr{};
    check_rc(ibv_query_device(pd->context, &attr), "ibv_query_device");
    if (size > attr.max_mr_size) {
        throw UserError(fmt::format("a {}-byte memory region exceeds RDMA device {}'s max_mr_size of {} bytes: use "
                                    "fewer or smaller slots",
                                    size, ibv_get_device_name(pd->context->device), attr.max_mr_size));
    }
    map();
    const std::size_t length = round_up(size, huge_ ? kHugePage : kPage);
    check_memlock(length);
    ibv_mr* mr = ibv_reg_mr(pd, map_.get(), size, access);
    if (mr == nullptr) {
        const int err = errno;
        // Running out of regions looks like any ENOMEM: name the limit.
        throw SystemError("ibv_reg_mr", err,
                          fmt::format("{} bytes; device {} allows {} memory regions in all, each connection uses 4",
                                      size, ibv_get_device_name(pd->context->device), attr.max_mr));
    }
    mr_.reset(mr);
    lkey_ = mr->lkey;
    rkey_ = mr->rkey;
}

RegisteredRegion::RegisteredRegion(std::size_t size, std::uint32_t key, std::shared_ptr<void> registration)
    : size_(size), map_(nullptr, Unmap{0}), fabric_registration_(std::move(registration)), lkey_(key), rkey_(key) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    map();
}

void RegisteredRegion::map() {
    // Huge pages only pay off (fewer NIC translation entries) for large
    // regions; MAP_HUGETLB fails cleanly when none are reserved.
    const std::size_t size = size_;
    void* p = MAP_FAILED;
    std::size_t length = round_up(size, kPage);
    if (size >= kHugePage) {
        const std::size_t huge_len = round_up(size, kHugePage);
        p = mmap(nullptr, huge_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (p != MAP_FAILED) {
            length = huge_len;
            huge_ = true;
        }
    }
    if (p == MAP_FAILED) {
        p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            throw SystemError("mmap", errno, std::to_string(length) + " bytes");
        }
    }
    map_ = std::unique_ptr<void, Unmap>(p, Unmap{length});
}

} // namespace rdmastream
