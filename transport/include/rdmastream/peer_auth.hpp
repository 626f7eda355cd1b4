// SPDX-License-Identifier: LGPL-2.1-or-later
// Authentication with a pre-shared key (since protocol 3): the key, read
// once from a file, and the proof each end of a connection sends during the
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

#include "rdmastream/wire.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace rdmastream {

// A key in locked memory that is zeroed when it goes. Never copied, never
// printed: messages name its file (origin()), not its bytes.
class PresharedKey {
public:
    static constexpr std::size_t kMinBytes = 32;
    static constexpr std::size_t kMaxBytes = 1024;
    using WarnFn = std::function<void(const std::string&)>;

    // The whole file is the key: 32 to 1024 bytes, any bytes (e.g.
    // `head -c 32 /dev/urandom > FILE`). Throws UserError naming the file
    // when it is missing, unreadable, not a regular file, or of the wrong
    // size. `warn` (may be empty) is told when group or others may read or
    // write the file.
    static std::shared_ptr<const PresharedKey> from_file(const std::string& path, const WarnFn& warn);
    // A key from bytes in memory (tests); `origin` names it in messages.
    static std::shared_ptr<const PresharedKey> from_bytes(std::span<const std::byte> bytes, std::string origin);

    PresharedKey(const PresharedKey&) = delete;
    PresharedKey& operator=(const PresharedKey&) = delete;
    ~PresharedKey(); // zeroes and frees the key's memory

    const std::string& origin() const noexcept { return origin_; }

private:
    friend wire::KeyProof make_key_proof(const PresharedKey&, wire::Role, std::span<const std::byte>,
                                         std::span<const std::byte>);
    PresharedKey(std::size_t size, std::string origin);

    unsigned char* bytes_; // sodium_malloc'd: guarded pages, locked when the limit allows
    std::size_t size_;
    std::string origin_;
};

// A fresh random nonce for a hello.
wire::Nonce fresh_nonce();

// The proof that the end in `role` holds `key`, over the two hellos as sent.
wire::KeyProof make_key_proof(const PresharedKey& key, wire::Role role, std::span<const std::byte> sender_hello,
                              std::span<const std::byte> receiver_hello);
// Whether `got` is the proof `want` is (compared in constant time).
bool same_proof(const wire::KeyProof& got, const wire::KeyProof& want) noexcept;

} // namespace rdmastream
