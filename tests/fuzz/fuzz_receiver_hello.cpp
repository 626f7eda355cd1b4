// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_receiver_hello on any bytes (the private data of the
// receiver's rdma_cm connect or accept). What it accepts must mean the same
// after a round trip.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto h = accepted([&] { return wire::decode_receiver_hello(rdmastream::fuzz::as_bytes(data, size)); });
    if (!h) {
        return 0;
    }
    FUZZ_CHECK(h->slot_count >= 1 && h->slot_count <= wire::kMaxSlots);
    for (std::size_t i : {7u, 12u, 13u, 14u, 15u}) { // flags' high byte, and reserved@12
        FUZZ_CHECK(data[i] == 0);
    }
    FUZZ_CHECK((data[6] & 0xf8) == 0); // only key, join and path B are defined
    FUZZ_CHECK((data[6] & 4) == 0 || (data[6] & 2) != 0); // path B only with join
    const auto again = wire::decode_receiver_hello(wire::encode(*h));
    FUZZ_CHECK(again.slot_count == h->slot_count && again.has_key == h->has_key && again.nonce == h->nonce);
    FUZZ_CHECK(again.join.join == h->join.join && again.join.path_b == h->join.path_b);
    return 0;
}
