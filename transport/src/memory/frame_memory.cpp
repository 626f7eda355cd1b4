// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/frame_memory_impl.hpp"

#include "rdmastream/error.hpp"

namespace rdmastream {

FrameMemory::FrameMemory() noexcept = default;
FrameMemory::FrameMemory(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
FrameMemory::FrameMemory(FrameMemory&&) noexcept = default;
FrameMemory& FrameMemory::operator=(FrameMemory&&) noexcept = default;
FrameMemory::~FrameMemory() = default;

std::span<std::byte> FrameMemory::bytes() const noexcept { return impl_ ? impl_->region.bytes() : std::span<std::byte>{}; }
bool FrameMemory::huge_pages() const noexcept { return impl_ && impl_->region.huge_pages(); }

MemoryDomain::MemoryDomain() noexcept = default;
MemoryDomain::MemoryDomain(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

FrameMemory MemoryDomain::allocate(std::size_t size) const {
    if (!impl_ || !impl_->pd) {
        throw UserError("no memory domain: allocate frame memory from a Sender's memory()");
    }
    // Local read only: the NIC reads frames from it; nobody writes into it remotely.
    return FrameMemory(std::make_unique<FrameMemory::Impl>(FrameMemory::Impl{impl_, RegisteredRegion(impl_->pd.get(), size, 0)}));
}

} // namespace rdmastream
