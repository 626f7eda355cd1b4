// SPDX-License-Identifier: LGPL-2.1-or-later
#include "wire/peer_auth.hpp"

#include "rdmastream/error.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace rdmastream {

namespace {
// sodium_init() is idempotent and thread-safe; it picks the fastest
// implementations and seeds the random generator.
void sodium_ready() {
    static const int ok = sodium_init();
    if (ok < 0) {
        throw SystemError("sodium_init", 0, "returned -1: libsodium could not initialise");
    }
}

constexpr char kProofLabel[] = "rdmastream key proof, protocol 3";
constexpr char kSessionLabel[] = "rdmastream session, protocol 7";
constexpr char kTokenLabel[] = "rdmastream session token";
constexpr char kJoinLabel[] = "rdmastream join proof, protocol 7";
static_assert(crypto_auth_hmacsha512256_BYTES == wire::kMacSize);

const std::string kMakeOne = "make one with `head -c 32 /dev/urandom > FILE && chmod 600 FILE` and give both "
                             "ends the same file";

// Closes a descriptor when it goes.
struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};
} // namespace

PresharedKey::PresharedKey(std::size_t size, std::string origin)
    : bytes_(nullptr), size_(size), origin_(std::move(origin)) {
    sodium_ready();
    bytes_ = static_cast<unsigned char*>(sodium_malloc(size));
    if (bytes_ == nullptr) {
        throw std::bad_alloc();
    }
}

PresharedKey::~PresharedKey() {
    sodium_free(bytes_); // zeroes the memory first
}

std::shared_ptr<const PresharedKey> PresharedKey::from_bytes(std::span<const std::byte> bytes, std::string origin) {
    if (bytes.size() < kMinBytes || bytes.size() > kMaxBytes) {
        throw UserError(fmt::format("the key {} has {} bytes; a key has {} to {}", origin, bytes.size(), kMinBytes,
                                    kMaxBytes));
    }
    std::shared_ptr<PresharedKey> key(new PresharedKey(bytes.size(), std::move(origin)));
    std::memcpy(key->bytes_, bytes.data(), bytes.size());
    return key;
}

std::shared_ptr<const PresharedKey> PresharedKey::from_file(const std::string& path, const WarnFn& warn) {
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) {
        const int err = errno;
        if (err == ENOENT) {
            throw UserError(fmt::format("key file {} does not exist: {}", path, kMakeOne));
        }
        throw UserError(fmt::format("key file {} cannot be opened: {}{}", path, std::strerror(err),
                                    err == EACCES ? " (run as the user who owns it)" : ""));
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) {
        throw UserError(fmt::format("key file {} cannot be examined: {}", path, std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode)) {
        throw UserError(fmt::format("key file {} is not a regular file: {}", path, kMakeOne));
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < kMinBytes || size > kMaxBytes) {
        throw UserError(fmt::format("key file {} holds {} bytes; a key has {} to {}: {}", path, size, kMinBytes,
                                    kMaxBytes, kMakeOne));
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0 && warn) {
        warn(fmt::format("warning: key file {} is open to group or others (mode {:04o}): anyone who reads it can "
                         "join the stream; chmod 600 {}",
                         path, st.st_mode & 07777, path));
    }
    // Straight into the key's locked memory: no copy of the key elsewhere.
    std::shared_ptr<PresharedKey> key(new PresharedKey(size, path));
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = ::read(f.fd, key->bytes_ + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            throw UserError(fmt::format("key file {} could not be read: {}", path,
                                        n < 0 ? std::strerror(errno) : "it got shorter while being read"));
        }
        got += static_cast<std::size_t>(n);
    }
    return key;
}

// PresharedKey's one reader: the proofs below.
struct KeyBytes {
    static const unsigned char* data(const PresharedKey& k) noexcept { return k.bytes_; }
    static std::size_t size(const PresharedKey& k) noexcept { return k.size_; }
};

wire::Nonce fresh_nonce() {
    sodium_ready();
    wire::Nonce n;
    randombytes_buf(n.data(), n.size());
    return n;
}

namespace {
// HMAC-SHA-512-256 under `key` of the label (its NUL included), the role
// byte where there is one, and two hellos, into `out`.
void mac_of(std::span<const unsigned char> key, std::span<const char> label, const wire::Role* role,
            std::span<const std::byte> sender_hello, std::span<const std::byte> receiver_hello,
            std::span<unsigned char, wire::kMacSize> out) {
    sodium_ready();
    const auto bytes = [](std::span<const std::byte> s) { return reinterpret_cast<const unsigned char*>(s.data()); };
    crypto_auth_hmacsha512256_state st;
    crypto_auth_hmacsha512256_init(&st, key.data(), key.size());
    crypto_auth_hmacsha512256_update(&st, reinterpret_cast<const unsigned char*>(label.data()), label.size());
    if (role != nullptr) {
        const auto role_byte = static_cast<unsigned char>(*role);
        crypto_auth_hmacsha512256_update(&st, &role_byte, 1);
    }
    crypto_auth_hmacsha512256_update(&st, bytes(sender_hello), sender_hello.size());
    crypto_auth_hmacsha512256_update(&st, bytes(receiver_hello), receiver_hello.size());
    crypto_auth_hmacsha512256_final(&st, out.data());
    sodium_memzero(&st, sizeof st); // the state holds the key's pads
}

template <class Proof>
bool same_mac(const Proof& got, const Proof& want) noexcept {
    return got.role == want.role &&
           crypto_verify_32(reinterpret_cast<const unsigned char*>(got.mac.data()),
                            reinterpret_cast<const unsigned char*>(want.mac.data())) == 0;
}
} // namespace

wire::KeyProof make_key_proof(const PresharedKey& key, wire::Role role, std::span<const std::byte> sender_hello,
                              std::span<const std::byte> receiver_hello) {
    wire::KeyProof p;
    p.role = role;
    mac_of({KeyBytes::data(key), KeyBytes::size(key)}, kProofLabel, &role, sender_hello, receiver_hello,
           std::span<unsigned char, wire::kMacSize>(reinterpret_cast<unsigned char*>(p.mac.data()), wire::kMacSize));
    return p;
}

bool same_proof(const wire::KeyProof& got, const wire::KeyProof& want) noexcept { return same_mac(got, want); }

SessionSecret::SessionSecret(const PresharedKey* key, std::span<const std::byte> sender_hello,
                             std::span<const std::byte> receiver_hello) {
    static constexpr std::array<unsigned char, 32> kNoKey{};
    const std::span<const unsigned char> k =
        key != nullptr ? std::span<const unsigned char>(KeyBytes::data(*key), KeyBytes::size(*key))
                       : std::span<const unsigned char>(kNoKey);
    mac_of(k, kSessionLabel, nullptr, sender_hello, receiver_hello, secret_);
    std::array<unsigned char, wire::kMacSize> t{};
    crypto_auth_hmacsha512256(t.data(), reinterpret_cast<const unsigned char*>(kTokenLabel), sizeof kTokenLabel,
                              secret_.data());
    std::memcpy(token_.data(), t.data(), token_.size());
}

SessionSecret::~SessionSecret() { sodium_memzero(secret_.data(), secret_.size()); }

wire::JoinProof SessionSecret::join_proof(wire::Role role, std::span<const std::byte> sender_hello,
                                          std::span<const std::byte> receiver_hello) const {
    wire::JoinProof p;
    p.role = role;
    mac_of(secret_, kJoinLabel, &role, sender_hello, receiver_hello,
           std::span<unsigned char, wire::kMacSize>(reinterpret_cast<unsigned char*>(p.mac.data()), wire::kMacSize));
    return p;
}

bool same_proof(const wire::JoinProof& got, const wire::JoinProof& want) noexcept { return same_mac(got, want); }

} // namespace rdmastream
