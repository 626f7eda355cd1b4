// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/frame_memory_impl.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {

FrameMemory::FrameMemory() noexcept = default;
FrameMemory::FrameMemory(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
FrameMemory::FrameMemory(FrameMemory&&) noexcept = default;
FrameMemory& FrameMemory::operator=(FrameMemory&&) noexcept = default;
FrameMemory::~FrameMemory() = default;

std::span<std::byte> FrameMemory::bytes() const noexcept { return impl_ ? impl_->pages.bytes() : std::span<std::byte>{}; }
bool FrameMemory::huge_pages() const noexcept { return impl_ && impl_->pages.huge_pages(); }

FrameMemory::Impl::~Impl() {
    std::lock_guard lock(domain->mutex_);
    std::erase(domain->live_, this);
}

MemoryDomain::MemoryDomain() noexcept = default;
MemoryDomain::MemoryDomain(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}

FrameMemory MemoryDomain::allocate(std::size_t size) const {
    if (!impl_) {
        throw UserError("no memory domain: allocate frame memory from a Sender's memory()");
    }
    return FrameMemory(impl_->allocate(impl_, size));
}

std::unique_ptr<FrameMemory::Impl> MemoryDomain::Impl::allocate(const std::shared_ptr<Impl>& self, std::size_t size) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    auto memory = std::make_unique<FrameMemory::Impl>(self, size);
    std::lock_guard lock(mutex_);
    // Registered on every device under the lock, so that a device added
    // meanwhile either sees this memory live or registers it here.
    for (std::size_t d = 0; d < devices_.size(); ++d) {
        if (devices_[d]) memory->registrations[d] = devices_[d](memory->pages.bytes(), memory->pages.length());
    }
    live_.push_back(memory.get());
    return memory;
}

std::size_t MemoryDomain::Impl::add_device(PageRegistrar registrar) {
    std::lock_guard lock(mutex_);
    const auto free = std::find_if(devices_.begin(), devices_.end(), [](const PageRegistrar& r) { return !r; });
    if (free == devices_.end() && devices_.size() == kMaxMemoryDevices) {
        throw UserError(fmt::format("frame memory is registered on {} RDMA devices already, the most one stream "
                                    "keeps: a path cannot come back on yet another device",
                                    kMaxMemoryDevices));
    }
    const auto d = static_cast<std::size_t>(free - devices_.begin());
    // All or nothing: a registration that fails leaves no device half added.
    std::vector<PageRegistration> made;
    made.reserve(live_.size());
    for (FrameMemory::Impl* m : live_) made.push_back(registrar(m->pages.bytes(), m->pages.length()));
    for (std::size_t i = 0; i < live_.size(); ++i) live_[i]->registrations[d] = std::move(made[i]);
    if (d == devices_.size()) devices_.emplace_back();
    devices_[d] = std::move(registrar);
    return d;
}

void MemoryDomain::Impl::remove_device(std::size_t device) noexcept {
    std::lock_guard lock(mutex_);
    if (device >= devices_.size()) return;
    for (FrameMemory::Impl* m : live_) m->registrations[device] = {};
    devices_[device] = nullptr;
}

} // namespace rdmastream
