// SPDX-License-Identifier: LGPL-2.1-or-later
// Deterministic frames for the RDMA checks: both ends compute the same size,
// slot and bytes for frame N, so the receiver can verify in place without any
// copy or side channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmastream::check {

inline std::uint64_t mix(std::uint64_t x) { // splitmix64 finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Payload size of frame `seq`: varies between min and max inclusive.
inline std::uint32_t frame_size(std::uint64_t seq, std::uint32_t min, std::uint32_t max) {
    return min + static_cast<std::uint32_t>(mix(seq) % (std::uint64_t{max} - min + 1));
}

inline void fill(std::span<std::byte> out, std::uint64_t seq) {
    std::uint64_t state = mix(seq ^ 0x5eedull);
    std::size_t i = 0;
    for (; i + 8 <= out.size(); i += 8) {
        state = mix(state);
        for (int b = 0; b < 8; ++b) out[i + b] = static_cast<std::byte>(state >> (8 * b));
    }
    state = mix(state);
    for (int b = 0; i < out.size(); ++i, ++b) out[i] = static_cast<std::byte>(state >> (8 * b));
}

// Index of the first byte that differs from fill(seq), or size() if none.
inline std::size_t first_mismatch(std::span<const std::byte> in, std::uint64_t seq) {
    std::uint64_t state = mix(seq ^ 0x5eedull);
    std::size_t i = 0;
    for (; i + 8 <= in.size(); i += 8) {
        state = mix(state);
        for (int b = 0; b < 8; ++b)
            if (in[i + b] != static_cast<std::byte>(state >> (8 * b))) return i + b;
    }
    state = mix(state);
    for (int b = 0; i < in.size(); ++i, ++b)
        if (in[i] != static_cast<std::byte>(state >> (8 * b))) return i;
    return in.size();
}

} // namespace rdmastream::check
