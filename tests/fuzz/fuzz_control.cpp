// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_control on any immediate (a control message's SEND_WITH_IMM).
// Input: 4 bytes, little endian. What it accepts is a known kind, and
// encodes back to the same immediate.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto value = in.take<std::uint32_t>();
    const auto kind = accepted([&] { return wire::decode_control(value); });
    if (!kind) {
        return 0;
    }
    switch (*kind) {
    case wire::Control::kEndOfStream:
    case wire::Control::kKeepalive:
    case wire::Control::kFormat:
    case wire::Control::kRing:
    case wire::Control::kCredits:
    case wire::Control::kAuth:
    case wire::Control::kLeaving:
    case wire::Control::kClock:
    case wire::Control::kJoin:
        break;
    default:
        rdmastream::fuzz::fail("decode_control returned an unknown kind", __FILE__, __LINE__);
    }
    FUZZ_CHECK(wire::encode(*kind) == value);
    return 0;
}
