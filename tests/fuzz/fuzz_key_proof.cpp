// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_key_proof on any bytes (a kAuth message during the
// handshake), as either end reads it, and decode_join_proof (the same
// layout, another magic: a joining path's proof). What either accepts
// claims the peer's role and survives a round trip; nothing is both.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (const wire::Role from : {wire::Role::kSender, wire::Role::kReceiver}) {
        const auto p = accepted([&] { return wire::decode_key_proof(rdmastream::fuzz::as_bytes(data, size), from); });
        if (!p) {
            continue;
        }
        FUZZ_CHECK(p->role == from); // a reflected proof never gets through
        FUZZ_CHECK(data[7] == 0);    // reserved@7
        const auto again = wire::decode_key_proof(wire::encode(*p), from);
        FUZZ_CHECK(again.mac == p->mac);
    }
    for (const wire::Role from : {wire::Role::kSender, wire::Role::kReceiver}) {
        const auto p = accepted([&] { return wire::decode_join_proof(rdmastream::fuzz::as_bytes(data, size), from); });
        if (!p) {
            continue;
        }
        FUZZ_CHECK(p->role == from);
        FUZZ_CHECK(!accepted([&] { return wire::decode_key_proof(rdmastream::fuzz::as_bytes(data, size), from); }));
        const auto again = wire::decode_join_proof(wire::encode(*p), from);
        FUZZ_CHECK(again.mac == p->mac);
    }
    return 0;
}
