// SPDX-License-Identifier: LGPL-2.1-or-later
// Anonymous memory for the NIC: 2 MiB huge pages when the size allows and
// the system has them, else 4 KiB pages. Registration is the owner's
// (RegisteredRegion registers one mapping as one region, SlotRing each slot
// of one mapping on its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace rdmastream {

class PageMapping {
public:
    // Maps at least `size` bytes; throws SystemError("mmap") on failure.
    explicit PageMapping(std::size_t size);

    std::span<std::byte> bytes() const noexcept { return {static_cast<std::byte*>(map_.get()), size_}; }
    std::uint64_t addr() const noexcept { return reinterpret_cast<std::uintptr_t>(map_.get()); }
    bool huge_pages() const noexcept { return huge_; }
    // What is mapped (size rounded up to the page size used).
    std::size_t length() const noexcept { return map_.get_deleter().length; }

private:
    struct Unmap {
        std::size_t length = 0;
        void operator()(void* p) const noexcept;
    };
    std::size_t size_;
    bool huge_ = false;
    std::unique_ptr<void, Unmap> map_;
};

} // namespace rdmastream
