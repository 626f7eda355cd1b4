// SPDX-License-Identifier: LGPL-2.1-or-later
// Page-aligned memory registered with the NIC: the frame ring on the
// receiver, the frame buffers on the sender.
#pragma once

#include "memory/page_mapping.hpp"
#include "memory/page_registration.hpp"

#include <cstddef>
#include <memory>
#include <span>

namespace rdmastream {

class RegisteredRegion {
public:
    // Maps `size` bytes (2 MiB huge pages when the size allows and the system
    // has them, else 4 KiB pages) and registers them on `pd` with `access`
    // flags (register_pages: a low RLIMIT_MEMLOCK gives a UserError with the
    // fix rather than ENOMEM from the driver). The caller keeps `pd` alive
    // past the region.
    RegisteredRegion(ibv_pd* pd, std::size_t size, int access);
    // Pages mapped by the caller with their registration (an in-process
    // fabric's, in tests and benchmarks: it names them by one key as lkey
    // and rkey and forgets them when the registration goes, before the
    // pages are unmapped).
    RegisteredRegion(PageMapping pages, PageRegistration registration) noexcept;
    RegisteredRegion(RegisteredRegion&&) noexcept = default;
    // No assignment: the defaulted one would unmap the old pages before
    // deregistering them. Replace a region through std::optional instead.
    RegisteredRegion& operator=(RegisteredRegion&&) = delete;

    std::span<std::byte> bytes() const noexcept { return map_.bytes(); }
    std::uint32_t lkey() const noexcept { return reg_.lkey; }
    std::uint32_t rkey() const noexcept { return reg_.rkey; }
    std::uint64_t addr() const noexcept { return map_.addr(); }
    bool huge_pages() const noexcept { return map_.huge_pages(); }

private:
    PageMapping map_;
    PageRegistration reg_; // after map_: deregistered before the pages go
};

// Throws UserError naming `ulimit -l` when `bytes` more cannot be locked.
void check_memlock(std::size_t bytes);

} // namespace rdmastream
