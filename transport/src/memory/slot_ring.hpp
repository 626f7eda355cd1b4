// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiver's ring: slot_count slots of slot_size bytes in one mapping,
// made known to the NIC one of two ways.
//
// With memory windows (asked for: RingConfig::memory_windows, rdmarecv
// --memory-windows, rdmasrc memory-windows=true; and the device has type
// 2 windows), each slot is its own memory region, registered LOCAL_WRITE |
// MW_BIND with no remote access, and has a type 2 window. A slot's window is bound over the slot (IBV_WR_BIND_MW, a fresh
// key each time) when its credit goes out, and invalidated (IBV_WR_LOCAL_INV)
// when a frame has arrived in it: a sender can write only into slots it
// holds credits for. One region per slot, not one for the ring, because
// rxe checks a window's address against its region's range rather than the
// window's own (docs/security.md, "Writes outside credits").
//
// Without windows (the default), the ring is one region registered
// LOCAL_WRITE | REMOTE_WRITE, and every slot is written with its rkey.
//
// A Datapath makes one (register_ring); this base holds the mapping and
// what the per-frame path needs (the regions and windows, by slot), the
// datapath's subclass owns the verbs objects (or the fabric's stand-ins)
// and releases them, windows first, before the mapping goes.
#pragma once

#include "memory/page_mapping.hpp"

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rdmastream {

class SlotRing {
public:
    SlotRing(const SlotRing&) = delete;
    SlotRing& operator=(const SlotRing&) = delete;
    virtual ~SlotRing() = default;

    std::uint32_t slot_count() const noexcept { return slot_count_; }
    std::uint32_t slot_size() const noexcept { return slot_size_; }
    std::span<std::byte> slot(std::uint32_t s) const noexcept {
        return pages_.bytes().subspan(std::size_t{s} * slot_size_, slot_size_);
    }
    std::uint64_t addr() const noexcept { return pages_.addr(); }
    bool huge_pages() const noexcept { return pages_.huge_pages(); }
    bool windows() const noexcept { return !windows_.empty(); }
    // Without windows: the ring region's rkey (every slot's); 0 with windows.
    std::uint32_t ring_rkey() const noexcept { return windows() ? 0 : regions_.front()->rkey; }
    // The key slot s answers to: its window's latest, or the ring's.
    std::uint32_t rkey(std::uint32_t s) const noexcept { return windows() ? windows_[s]->rkey : ring_rkey(); }

    // With windows. Fills `wr` (every field but wr_id and next) to bind slot
    // s's window over the slot for remote write, with the next key; returns
    // that key. Post it, then call bound(): the provider reads the window's
    // current key from mw->rkey when the bind is posted, and for type 2
    // windows neither libibverbs nor the provider updates it.
    std::uint32_t bind_request(std::uint32_t s, ibv_send_wr& wr) const noexcept;
    void bound(std::uint32_t s, std::uint32_t key) noexcept { windows_[s]->rkey = key; }
    // Fills `wr` (every field but wr_id, next and send_flags) to invalidate
    // slot s's window.
    void invalidate_request(std::uint32_t s, ibv_send_wr& wr) const noexcept;

protected:
    // Maps the ring; the subclass registers it (regions_, windows_).
    SlotRing(std::uint32_t slot_count, std::uint32_t slot_size);

    PageMapping pages_;
    // Borrowed from the subclass, which owns them: one region per slot with
    // windows, else one for the whole ring; one window per slot, or none.
    std::vector<ibv_mr*> regions_;
    std::vector<ibv_mw*> windows_;

private:
    std::uint32_t slot_count_, slot_size_;
};

// Whether the device binds type 2 memory windows (ibv_query_device).
bool has_type2_windows(ibv_context* ctx);

// A ring registered on `pd` (VerbsDatapath::register_ring). Throws
// UserError past the device's or RLIMIT_MEMLOCK's limits, SystemError
// naming the call that failed.
std::unique_ptr<SlotRing> register_verbs_ring(ibv_pd* pd, std::uint32_t slot_count, std::uint32_t slot_size,
                                              bool windows);

} // namespace rdmastream
