// SPDX-License-Identifier: LGPL-2.1-or-later
// Authentication with a pre-shared key (since protocol 3; the key itself is
// key.hpp): the proof each end of a connection sends during the
// handshake to show that it holds the same key. libsodium does the cryptography
// (HMAC-SHA-512-256, constant-time comparison, random nonces); nothing here
// is hand-written crypto. The exchange itself is handshake.hpp's.
//
// A proof is HMAC-SHA-512-256(key, label || role || sender hello || receiver
// hello), the hellos byte for byte as they crossed the wire. Both hellos
// carry a fresh nonce, so a proof is good for one connection only (no
// replay); the role byte makes a sender's proof fail as a receiver's and the
// other way round (no reflection); and the hellos' versions, slot counts and
// key flags are covered too. docs/security.md says what this does not do.
#pragma once

#include "rdmastream/key.hpp"
#include "wire/wire.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace rdmastream {

// A fresh random nonce for a hello.
wire::Nonce fresh_nonce();

// The proof that the end in `role` holds `key`, over the two hellos as sent.
wire::KeyProof make_key_proof(const PresharedKey& key, wire::Role role, std::span<const std::byte> sender_hello,
                              std::span<const std::byte> receiver_hello);
// Whether `got` is the proof `want` is (compared in constant time).
bool same_proof(const wire::KeyProof& got, const wire::KeyProof& want) noexcept;

} // namespace rdmastream
