// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_ring_advert on any bytes (a kRing message). An accepted ring
// is within the limits and its address range does not wrap; with memory
// windows it has no ring rkey and a key per slot; it means the same after a
// round trip.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto a = accepted([&] { return wire::decode_ring_advert(rdmastream::fuzz::as_bytes(data, size)); });
    if (!a) {
        return 0;
    }
    FUZZ_CHECK(a->slot_count >= 1 && a->slot_count <= wire::kMaxSlots);
    FUZZ_CHECK(a->slot_size > wire::kSlotHeaderSize && a->slot_size <= wire::kMaxSlotSize);
    FUZZ_CHECK(a->addr != 0);
    for (std::size_t i : {7u, 29u}) { // flags' high byte, and reserved@29
        FUZZ_CHECK(data[i] == 0);
    }
    FUZZ_CHECK(a->flow < wire::kMaxFlows && data[28] == a->flow);
    FUZZ_CHECK(std::uint32_t{a->slot_base} + a->slot_count <= wire::kMaxSlots);
    FUZZ_CHECK((data[6] & 0xfc) == 0);
    FUZZ_CHECK(a->windows() == ((data[6] & 0x02) != 0));
    FUZZ_CHECK(!a->windows() || (a->rkey == 0 && a->slot_rkeys.size() == a->slot_count &&
                                 size >= wire::ring_advert_size(a->slot_count, true)));
    FUZZ_CHECK(a->addr + std::uint64_t{a->slot_count} * a->slot_size > a->addr); // no wrap
    const wire::RingAdvert b = wire::decode_ring_advert(wire::encode(*a));
    FUZZ_CHECK(b.slot_count == a->slot_count && b.slot_size == a->slot_size && b.addr == a->addr &&
               b.rkey == a->rkey && b.live == a->live && b.slot_rkeys == a->slot_rkeys && b.flow == a->flow &&
               b.slot_base == a->slot_base);
    return 0;
}
