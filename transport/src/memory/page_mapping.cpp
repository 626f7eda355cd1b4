// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/page_mapping.hpp"

#include "rdmastream/error.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <string>

namespace rdmastream {

namespace {
constexpr std::size_t kHugePage = 2u << 20;
constexpr std::size_t kPage = 4096;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
} // namespace

void PageMapping::Unmap::operator()(void* p) const noexcept {
    if (munmap(p, length) != 0) {
        std::perror("rdmastream: munmap");
    }
}

PageMapping::PageMapping(std::size_t size) : size_(size), map_(nullptr, Unmap{0}) {
    // Huge pages only pay off (fewer NIC translation entries) for large
    // regions; MAP_HUGETLB fails cleanly when none are reserved.
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
