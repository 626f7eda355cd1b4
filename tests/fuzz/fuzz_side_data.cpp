// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_side_data on any block (the bytes after a frame's payload).
// An accepted block's entries lie inside it, each of a known kind, at most
// once, with a size its kind allows; and written again they are the block,
// byte for byte (the form has no padding and no choice).
#include "fuzz_input.hpp"

#include "wire/side_data_wire.hpp"

#include <array>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto block = in.rest();
    std::array<rdmastream::SideData, rdmastream::kMaxSideDataEntries> entries{};
    const auto n = accepted([&] { return wire::decode_side_data(block, 3, entries); });
    if (!n) {
        return 0;
    }
    FUZZ_CHECK(*n <= entries.size());
    const std::span<const rdmastream::SideData> got(entries.data(), *n);
    for (const auto& e : got) {
        FUZZ_CHECK(e.bytes.data() >= block.data() && e.bytes.data() + e.bytes.size() <= block.data() + block.size());
    }
    // The sender's own checks take what the receiver took.
    FUZZ_CHECK(wire::side_data_size(got) == block.size());
    std::vector<std::byte> again(block.size());
    FUZZ_CHECK(wire::encode_side_data(got, again) == block.size());
    FUZZ_CHECK(std::equal(again.begin(), again.end(), block.begin()));
    return 0;
}
