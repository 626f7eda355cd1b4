// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_slot_header on any slot contents. Input: 4 bytes, the
// immediate the completion carried (little endian), then the slot's bytes.
// An accepted header's payload and side data fit the slot behind the header, its
// immediate is the completion's, and it means the same after a round trip.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto imm = in.take<std::uint32_t>();
    const wire::SlotImm expected{static_cast<std::uint16_t>(imm & 0xffffu), static_cast<std::uint16_t>(imm >> 16)};
    const auto slot = in.rest();
    const auto h = accepted([&] { return wire::decode_slot_header(slot, expected); });
    if (!h) {
        return 0;
    }
    FUZZ_CHECK(slot.size() > wire::kSlotHeaderSize);
    FUZZ_CHECK(std::uint64_t{h->payload_size} + h->side_data_size <= slot.size() - wire::kSlotHeaderSize);
    FUZZ_CHECK(h->imm.slot == expected.slot && h->imm.generation == expected.generation);
    FUZZ_CHECK((h->flags & ~wire::kFrameFlagsDefined) == 0);
    FUZZ_CHECK(static_cast<std::uint8_t>(slot[42]) == h->flow); // the flow: the receiver checks it against the slot
    for (std::size_t i : {43u, 56u, 57u, 58u, 59u, 60u, 61u, 62u, 63u}) {
        FUZZ_CHECK(slot[i] == std::byte{0}); // reserved
    }
    std::vector<std::byte> again(slot.begin(), slot.end()); // the same slot, its header written anew
    wire::encode(*h, std::span(again).first<wire::kSlotHeaderSize>());
    const wire::SlotHeader g = wire::decode_slot_header(again, expected);
    FUZZ_CHECK(g.sequence == h->sequence && g.pts == h->pts && g.duration == h->duration &&
               g.payload_size == h->payload_size && g.flags == h->flags && g.format_id == h->format_id &&
               g.sent_at_ns == h->sent_at_ns && g.side_data_size == h->side_data_size && g.flow == h->flow);
    return 0;
}
