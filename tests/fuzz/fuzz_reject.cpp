// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_reject on any bytes (an rdma_reject's private data, which may
// also be a CM's own). The text it returns goes to a terminal: printable
// ASCII only, and no longer than a reject carries.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // decode_reject refuses nothing: what is not ours is nullopt.
    const auto r = wire::decode_reject(rdmastream::fuzz::as_bytes(data, size));
    if (!r) {
        return 0;
    }
    FUZZ_CHECK(r->text.size() <= wire::kRejectTextMax);
    for (const char c : r->text) {
        FUZZ_CHECK(c >= 0x20 && c < 0x7f);
    }
    const auto back = wire::decode_reject(wire::encode(*r));
    FUZZ_CHECK(back && back->reason == r->reason && back->text == r->text);
    return 0;
}
