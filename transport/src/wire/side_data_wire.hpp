// SPDX-License-Identifier: LGPL-2.1-or-later
// The side data block (docs/protocol.md, "Side data"): a frame's per-frame
// data, written after its payload by the same RDMA write, as entries of
// kind (u16), length (u16) and bytes, back to back, no padding. The slot
// header gives the block's size.
#pragma once

#include "rdmastream/side_data.hpp"

#include <cstddef>
#include <span>

namespace rdmastream::wire {

// The block's size for `entries` (heads included). Throws UserError if an
// entry is refused as decode_side_data would refuse it.
std::size_t side_data_size(std::span<const SideData> entries);
// Into `out` (at least side_data_size(entries) bytes); returns the bytes used.
std::size_t encode_side_data(std::span<const SideData> entries, std::span<std::byte> out);
// The block's entries into `out` (kMaxSideDataEntries), each pointing into
// `block`; returns how many. Refuses (ProtocolError, naming slot and entry) a
// head or length past the block's end, an unknown kind, a kind twice, more
// than kMaxSideDataEntries entries, and a size its kind does not allow.
std::size_t decode_side_data(std::span<const std::byte> block, std::uint16_t slot,
                             std::span<SideData, kMaxSideDataEntries> out);

} // namespace rdmastream::wire
