// SPDX-License-Identifier: LGPL-2.1-or-later
// Shared by wire.cpp and wire_handshake.cpp: little-endian fields and the
// checks every message's decoder makes first (magic, version, reserved
// bytes). Private to the transport.
#pragma once

#include "rdmastream/error.hpp"
#include "wire/wire.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>

namespace rdmastream::wire::detail {

// A field is one load or store where the host is little-endian (the byte
// loops, which the compiler keeps byte by byte at -O2, cost a few hundred
// instructions per slot header); elsewhere it is put together byte by byte.
template <typename T>
void store_le(std::span<std::byte> out, std::size_t offset, T value) noexcept {
    auto u = static_cast<std::make_unsigned_t<T>>(value);
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(out.subspan(offset, sizeof(T)).data(), &u, sizeof(T));
    } else {
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            out[offset + i] = static_cast<std::byte>((u >> (8 * i)) & 0xffu);
        }
    }
}

template <typename T>
T load_le(std::span<const std::byte> in, std::size_t offset) noexcept {
    std::make_unsigned_t<T> u = 0;
    if constexpr (std::endian::native == std::endian::little) {
        std::memcpy(&u, in.subspan(offset, sizeof(T)).data(), sizeof(T));
    } else {
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            u |= static_cast<std::make_unsigned_t<T>>(static_cast<std::make_unsigned_t<T>>(in[offset + i])
                                                      << (8 * i));
        }
    }
    return static_cast<T>(u);
}

// The version before the length: an older peer's shorter message is told
// apart from a truncated one.
inline void check_version(std::uint16_t version) {
    if (version != kProtocolVersion) {
        throw ProtocolError(fmt::format("peer speaks rdmastream protocol {}, this is {}: upgrade {} (both ends "
                                        "must run the same protocol)",
                                        version, kProtocolVersion, version < kProtocolVersion ? "it" : "this end"));
    }
}

inline void check_magic_and_version(std::span<const std::byte> bytes, std::size_t need, std::uint32_t want_magic,
                                    const char* what) {
    if (bytes.size() < 6) {
        throw ProtocolError(fmt::format("{} too short: {} bytes, need {}", what, bytes.size(), need));
    }
    if (auto magic = load_le<std::uint32_t>(bytes, 0); magic != want_magic) {
        throw ProtocolError(fmt::format("{} has bad magic {:#010x}: the peer is not rdmastream", what, magic));
    }
    check_version(load_le<std::uint16_t>(bytes, 4));
    if (bytes.size() < need) {
        throw ProtocolError(fmt::format("{} too short: {} bytes, need {}", what, bytes.size(), need));
    }
}

// Reserved bytes [from, to) of `what` must be zero: a peer that sets them
// speaks something else. Names the field (docs/protocol.md's name for it).
inline void check_reserved(std::span<const std::byte> bytes, std::size_t from, std::size_t to, const char* what,
                           const char* field) {
    for (std::size_t i = from; i < to; ++i) {
        if (bytes[i] != std::byte{0}) {
            throw ProtocolError(fmt::format("{} has reserved field {} (offset {}) set to {:#04x}: it must be zero",
                                            what, field, i, static_cast<unsigned>(bytes[i])));
        }
    }
}

} // namespace rdmastream::wire::detail
