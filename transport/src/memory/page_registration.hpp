// SPDX-License-Identifier: LGPL-2.1-or-later
// One registration of mapped pages with one device: the keys the NIC knows
// them by and what undoes it. Pages and registrations are apart so that one
// mapping can be registered on several devices (a sender's frame memory,
// written over two paths on two NICs: frame_memory_impl.hpp).
#pragma once

#include "setup/verbs_owners.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace rdmastream {

struct PageRegistration {
    std::uint32_t lkey = 0, rkey = 0;
    // Deregisters when the last copy goes (an MR over verbs; the fabric's
    // record of the region in tests). Must go before the pages do.
    std::shared_ptr<void> keep;
};

// Registers `pages` (page-aligned, mapped) on `pd` with ibv_reg_mr's
// `access` flags, after checking the device's max_mr_size and RLIMIT_MEMLOCK
// for `locked` bytes (the mapping's length), so that either limit gives a
// UserError with its fix rather than the driver's ENOMEM. The registration
// keeps `pd` alive (memory may outlive the connection that made the PD).
PageRegistration register_pages(std::shared_ptr<ibv_pd> pd, std::span<std::byte> pages, std::size_t locked,
                                int access);

// What registers a mapping's pages on one device for local reads (a sender's
// frame memory): register_pages on a PD over verbs, a fabric in tests.
using PageRegistrar = std::function<PageRegistration(std::span<std::byte> pages, std::size_t locked)>;

} // namespace rdmastream
