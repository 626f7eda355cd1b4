// SPDX-License-Identifier: LGPL-2.1-or-later
// Page-aligned memory registered with the NIC: the frame ring on the
// receiver, the frame buffers on the sender.
#pragma once

#include "memory/page_mapping.hpp"
#include "setup/verbs_owners.hpp"

#include <cstddef>
#include <memory>
#include <span>

namespace rdmastream {

class RegisteredRegion {
public:
    // Maps `size` bytes (2 MiB huge pages when the size allows and the system
    // has them, else 4 KiB pages) and registers them with `access` flags.
    // Checks RLIMIT_MEMLOCK first, so a low limit gives a UserError with the
    // fix rather than ENOMEM from the driver.
    RegisteredRegion(ibv_pd* pd, std::size_t size, int access);
    // The same memory for an in-process fabric (tests, benchmarks): mapped
    // alike, registered with no device; the fabric names it by `key` (as
    // lkey and rkey) and forgets it when `registration` goes, which is
    // before the pages are unmapped.
    RegisteredRegion(std::size_t size, std::uint32_t key, std::shared_ptr<void> registration);
    RegisteredRegion(RegisteredRegion&&) noexcept = default;
    // No assignment: the defaulted one would unmap the old pages before
    // deregistering them. Replace a region through std::optional instead.
    RegisteredRegion& operator=(RegisteredRegion&&) = delete;

    std::span<std::byte> bytes() const noexcept { return map_.bytes(); }
    std::uint32_t lkey() const noexcept { return lkey_; }
    std::uint32_t rkey() const noexcept { return rkey_; }
    std::uint64_t addr() const noexcept { return map_.addr(); }
    bool huge_pages() const noexcept { return map_.huge_pages(); }

private:
    RegisteredRegion(ibv_pd* pd, std::size_t size, int access, const ibv_device_attr& attr);

    PageMapping map_;
    MemoryRegion mr_; // after map_: deregistered before the pages go; empty for fabric memory
    std::shared_ptr<void> fabric_registration_; // likewise, for fabric memory
    std::uint32_t lkey_ = 0, rkey_ = 0;
};

// Throws UserError naming `ulimit -l` when `bytes` more cannot be locked.
void check_memlock(std::size_t bytes);

} // namespace rdmastream
