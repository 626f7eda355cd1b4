// SPDX-License-Identifier: LGPL-2.1-or-later
// What FrameMemory and MemoryDomain hold (memory.hpp): a registered region,
// and the protection domain it is registered on, kept alive by every region
// on it (a pool's memory may outlive the connection that made the PD).
#pragma once

#include "rdmastream/memory.hpp"
#include "memory/registered_region.hpp"

#include <memory>

namespace rdmastream {

struct MemoryDomain::Impl {
    std::shared_ptr<ibv_pd> pd;
};

struct FrameMemory::Impl {
    std::shared_ptr<MemoryDomain::Impl> domain; // first: outlives the registration below
    RegisteredRegion region;

    // Whether `bytes` lie inside this memory (what a send may name).
    bool holds(std::span<const std::byte> bytes) const noexcept {
        const auto all = region.bytes();
        return bytes.data() >= all.data() && bytes.data() + bytes.size() <= all.data() + all.size();
    }
};

} // namespace rdmastream
