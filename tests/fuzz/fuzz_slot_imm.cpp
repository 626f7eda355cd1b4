// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_slot_imm on any immediate and ring size (a frame's
// WRITE_WITH_IMM). Input: 4 bytes immediate, 4 bytes slot count (little
// endian, missing bytes are zero). An accepted slot is inside the ring.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto value = in.take<std::uint32_t>();
    const auto slot_count = in.take<std::uint32_t>();
    const auto imm = accepted([&] { return wire::decode_slot_imm(value, slot_count); });
    if (!imm) {
        return 0;
    }
    FUZZ_CHECK(imm->slot < slot_count);
    FUZZ_CHECK(wire::encode(*imm) == value);
    return 0;
}
