// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_sender_hello on any bytes (the rdma_cm connect request's
// private data). What it accepts must mean the same after a round trip. A
// join's token is fuzz_join_hello's.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto h = accepted([&] { return wire::decode_sender_hello(rdmastream::fuzz::as_bytes(data, size)); });
    if (!h) {
        return 0;
    }
    FUZZ_CHECK(h->max_slots != 0);
    for (std::size_t i : {7u, 12u, 13u, 14u, 15u}) { // flags' high byte, and reserved@12
        FUZZ_CHECK(data[i] == 0);
    }
    FUZZ_CHECK((data[6] & 0xf8) == 0); // only key, join and path B are defined
    FUZZ_CHECK((data[6] & 4) == 0 || (data[6] & 2) != 0); // path B only with join
    FUZZ_CHECK(h->join.join == ((data[6] & 2) != 0) && h->join.path_b == ((data[6] & 4) != 0));
    FUZZ_CHECK(wire::decode_sender_hello(wire::encode(*h)).max_slots == h->max_slots);
    return 0;
}
