// SPDX-License-Identifier: LGPL-2.1-or-later
// What the wire tests spoil and decode: an encoded message's bytes as a
// vector, and a stream format's message.
#pragma once

#include "wire/wire.hpp"

#include <array>
#include <cstddef>
#include <vector>

namespace rdmastream::test {

template <typename T>
std::vector<std::byte> bytes_of(const T& arr) {
    return {arr.begin(), arr.end()};
}

inline std::vector<std::byte> encoded(const wire::StreamFormat& f) {
    std::array<std::byte, wire::kControlPayloadMax> buf{};
    const std::size_t n = wire::encode(f, buf);
    return {buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n)};
}

} // namespace rdmastream::test
