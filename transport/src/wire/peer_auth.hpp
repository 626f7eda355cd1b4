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

// Two paths (docs/design/two-paths.md, decision 1): what binds a second
// path to the stream its first path carries. Both ends of the first path
// derive it from that path's hellos (as sent, nonces and all), under the
// pre-shared key where there is one:
//   S     = HMAC(K, label || sender hello || receiver hello), K the key or
//           32 zero bytes without one
//   token = the first 8 bytes of HMAC(S, token label): names the stream
//           to a joining connection's listener (it travels in the clear)
//   proof = HMAC(S, join label || role || the join's sender hello || its
//           receiver hello): only an end of the first path can make it
// The token never crosses the first path, and keying the proof by S rather
// than by the key alone means that another holder of the key who saw a
// token cannot join a stream that is not its own. Without a key, S is
// known to whoever read the first path's hellos, as everything of a keyless
// stream is (docs/security.md).
class SessionSecret {
public:
    SessionSecret(const PresharedKey* key, std::span<const std::byte> sender_hello,
                  std::span<const std::byte> receiver_hello);
    ~SessionSecret(); // zeroes the secret
    SessionSecret(const SessionSecret&) = delete;
    SessionSecret& operator=(const SessionSecret&) = delete;

    const wire::SessionToken& token() const noexcept { return token_; }
    // The join proof of the end in `role`, over the joining connection's two hellos as sent.
    wire::JoinProof join_proof(wire::Role role, std::span<const std::byte> sender_hello,
                               std::span<const std::byte> receiver_hello) const;

private:
    std::array<unsigned char, wire::kMacSize> secret_{};
    wire::SessionToken token_{};
};
// Whether `got` is the proof `want` is (compared in constant time).
bool same_proof(const wire::JoinProof& got, const wire::JoinProof& want) noexcept;

} // namespace rdmastream
