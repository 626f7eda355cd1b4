// SPDX-License-Identifier: LGPL-2.1-or-later
// The stream fuzz_join_hello's listener serves: a session secret of fixed
// hellos without a key, so that fuzz_make_seeds can write join requests
// that carry its token and the fuzzer starts from requests the screen
// takes.
#pragma once

#include "wire/peer_auth.hpp"
#include "wire/wire.hpp"

#include <memory>

namespace rdmastream::fuzz {

inline std::shared_ptr<const SessionSecret> join_stream() {
    wire::Nonce a{}, b{};
    a.fill(std::byte{0x5a});
    b.fill(std::byte{0xa5});
    static const auto stream = std::make_shared<const SessionSecret>(
        nullptr, wire::encode(wire::SenderHello{256, false, a}), wire::encode(wire::ReceiverHello{8, false, b}));
    return stream;
}

} // namespace rdmastream::fuzz
