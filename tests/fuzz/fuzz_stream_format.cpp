// SPDX-License-Identifier: LGPL-2.1-or-later
// wire::decode_stream_format on any kFormat payload. An accepted format has
// a non-zero id, a frame size a slot can hold, at most kMaxPlanes planes
// starting inside the frame and printable caps whose brackets nest at most
// kMaxCapsNesting deep; it means the same after a round trip.
#include "fuzz_input.hpp"

#include "wire/wire.hpp"

#include <array>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto f = accepted([&] { return wire::decode_stream_format(rdmastream::fuzz::as_bytes(data, size)); });
    if (!f) {
        return 0;
    }
    FUZZ_CHECK(f->id != 0);
    FUZZ_CHECK(f->flow < rdmastream::kMaxFlows && data[6] == f->flow && data[7] == 0);
    FUZZ_CHECK(f->max_frame_size >= 1 && f->max_frame_size <= wire::kMaxSlotSize - wire::kSlotHeaderSize);
    FUZZ_CHECK(f->plane_count <= wire::kMaxPlanes);
    for (std::size_t i = 0; i < f->plane_count; ++i) {
        FUZZ_CHECK(f->planes[i].offset < f->max_frame_size);
    }
    FUZZ_CHECK(f->caps.size() <= wire::kMaxCapsLength);
    FUZZ_CHECK(f->max_side_data <= rdmastream::kMaxSideDataBytes);
    FUZZ_CHECK(std::uint64_t{f->max_frame_size} + f->max_side_data <= wire::kMaxSlotSize - wire::kSlotHeaderSize);
    FUZZ_CHECK(size == 54 + f->caps.size()); // nothing after the caps
    std::size_t depth = 0;
    for (const char c : f->caps) {
        FUZZ_CHECK(c >= 0x20 && c < 0x7f);
        if (c == '(' || c == '[' || c == '{' || c == '<') FUZZ_CHECK(++depth <= wire::kMaxCapsNesting);
        if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) --depth;
    }
    std::array<std::byte, wire::kControlPayloadMax> out{};
    const std::size_t n = wire::encode(*f, out);
    const wire::StreamFormat g = wire::decode_stream_format(std::span(out).first(n));
    FUZZ_CHECK(g.id == f->id && g.max_frame_size == f->max_frame_size && g.plane_count == f->plane_count &&
               g.max_side_data == f->max_side_data && g.caps == f->caps && g.flow == f->flow);
    for (std::size_t i = 0; i < f->plane_count; ++i) {
        FUZZ_CHECK(g.planes[i].offset == f->planes[i].offset && g.planes[i].stride == f->planes[i].stride);
    }
    return 0;
}
