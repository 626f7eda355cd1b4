// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_credits on any kCredits payload. Input: 2 bytes slot count
// (little endian, taken modulo kMaxSlots + 1, so 0 is tried too), then the
// payload. Like the sender, the output has room for slot_count entries.
// Every credit it returns names a slot inside the ring, and carries the
// rkey its entry's second word gave (a round trip gives the same bytes).
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

#include <algorithm>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const std::uint32_t slot_count = in.take<std::uint16_t>() % (wire::kMaxSlots + 1);
    const auto payload = in.rest();
    std::vector<wire::Credit> out(slot_count);
    const auto n = accepted([&] { return wire::decode_credits(payload, slot_count, out); });
    if (!n) {
        return 0;
    }
    FUZZ_CHECK(*n >= 1 && *n <= slot_count && *n * wire::kCreditSize == payload.size());
    for (std::size_t i = 0; i < *n; ++i) {
        FUZZ_CHECK(out[i].imm.slot < slot_count);
    }
    std::vector<std::byte> again(*n * wire::kCreditSize);
    FUZZ_CHECK(wire::encode_credits(std::span(out).first(*n), again) == again.size());
    FUZZ_CHECK(std::equal(again.begin(), again.end(), payload.begin()));
    return 0;
}
