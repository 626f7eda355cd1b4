// SPDX-License-Identifier: LGPL-2.1-or-later
// What every fuzz target shares: the input as bytes, a reader that takes
// little-endian fields off its front, and the check that turns a broken
// property into a finding (libFuzzer reports the abort and saves the input).
//
// Refusing input is a decoder's job: accepted() turns ProtocolError into
// nullopt, which is not a finding. Any other exception, and a ProtocolError
// anywhere else (e.g. when decoding our own encoding again), escapes
// LLVMFuzzerTestOneInput: std::terminate aborts, libFuzzer reports a crash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string_view>

#include "rdmastream/error.hpp"
#include "wire/wire.hpp"

namespace rdmastream::fuzz {

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) noexcept {
    return {reinterpret_cast<const std::byte*>(data), size};
}

// Fields off the front of the input; zero once it is used up.
class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) noexcept : rest_(as_bytes(data, size)) {}

    template <typename T>
    T take() noexcept {
        std::uint64_t v = 0;
        for (std::size_t i = 0; i < sizeof(T) && !rest_.empty(); ++i) {
            v |= static_cast<std::uint64_t>(rest_.front()) << (8 * i);
            rest_ = rest_.subspan(1);
        }
        return static_cast<T>(v);
    }
    bool empty() const noexcept { return rest_.empty(); }
    std::span<const std::byte> rest() const noexcept { return rest_; }

private:
    std::span<const std::byte> rest_;
};

// What `decode()` returns, or nullopt when it refused the input.
template <typename Decode>
auto accepted(Decode&& decode) -> std::optional<decltype(decode())> {
    try {
        return decode();
    } catch (const ProtocolError&) {
        return std::nullopt;
    }
}

// Whether `s` gets past decode_stream_format as a format's caps: the
// targets that read caps strings see only what a receiver would.
inline bool wire_caps(std::string_view s) {
    if (s.size() > wire::kMaxCapsLength) return false;
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = 1;
    f.caps = s;
    std::array<std::byte, wire::kControlPayloadMax> bytes{};
    const std::size_t n = wire::encode(f, bytes);
    return accepted([&] { return wire::decode_stream_format(std::span(bytes).first(n)); }).has_value();
}

[[noreturn]] inline void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "fuzz property broken at %s:%d: %s\n", file, line, what);
    std::abort();
}

} // namespace rdmastream::fuzz

// A property that must hold for every input the code under test accepted.
#define FUZZ_CHECK(cond) ((cond) ? static_cast<void>(0) : ::rdmastream::fuzz::fail(#cond, __FILE__, __LINE__))
