// SPDX-License-Identifier: LGPL-2.1-or-later
// What FrameMemory and MemoryDomain hold (memory.hpp): one mapping of pages
// registered on every device the domain has (a sender writes a frame over
// each of its paths from the same pages, each path's device with its own
// key: docs/design/two-paths.md, Decision 2), and the domain: those devices
// and the memory alive on them, so that a device added later (a path that
// joins on another NIC) gets every live memory registered before it sends.
#pragma once

#include "rdmastream/memory.hpp"
#include "memory/page_mapping.hpp"
#include "memory/page_registration.hpp"

#include <array>
#include <memory>
#include <mutex>
#include <vector>

namespace rdmastream {

// The most devices one domain registers on: one per path, and the devices
// a path came back on after its own went (an rxe device removed and made
// again is a new device).
inline constexpr std::size_t kMaxMemoryDevices = 4;

struct MemoryDomain::Impl {
    // `first`: device 0's registrar (the first path's).
    explicit Impl(PageRegistrar first) { devices_.push_back(std::move(first)); }

    // Maps and registers `size` bytes on every device.
    std::unique_ptr<FrameMemory::Impl> allocate(const std::shared_ptr<Impl>& self, std::size_t size);
    // Registers every memory alive on one more device and every later one
    // there too; its index for FrameMemory::Impl::lkey. Call it from the
    // thread that sends (it writes keys that thread reads without a lock);
    // memory may be allocated on any other meanwhile.
    std::size_t add_device(PageRegistrar registrar);
    // Deregisters every memory on device `device` and lets go of its
    // registrar (and so of its protection domain): the device is going
    // away. Its index is free for a device added later. Same thread rule as
    // add_device: no send may post with its keys any more.
    void remove_device(std::size_t device) noexcept;

private:
    friend struct FrameMemory::Impl;
    mutable std::mutex mutex_; // devices_, live_
    std::vector<PageRegistrar> devices_; // empty: removed, its index free
    std::vector<FrameMemory::Impl*> live_;
};

struct FrameMemory::Impl {
    Impl(std::shared_ptr<MemoryDomain::Impl> owner, std::size_t size) : domain(std::move(owner)), pages(size) {}
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl(); // leaves the domain's live memory, then deregisters, then unmaps

    // The key device `device` of the domain reads these pages with.
    std::uint32_t lkey(std::size_t device) const noexcept { return registrations[device].lkey; }
    // Whether `bytes` lie inside this memory (what a send may name).
    bool holds(std::span<const std::byte> bytes) const noexcept {
        const auto all = pages.bytes();
        return bytes.data() >= all.data() && bytes.data() + bytes.size() <= all.data() + all.size();
    }
    bool of(const MemoryDomain::Impl* d) const noexcept { return domain.get() == d; }

    std::shared_ptr<MemoryDomain::Impl> domain; // first: outlives the registrations below
    PageMapping pages;
    std::array<PageRegistration, kMaxMemoryDevices> registrations; // after pages: deregistered first
};

} // namespace rdmastream
