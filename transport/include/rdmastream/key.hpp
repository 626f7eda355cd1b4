// SPDX-License-Identifier: LGPL-2.1-or-later
// A pre-shared key both ends of a stream prove they hold before the
// receiver's ring is handed over (docs/security.md): read once from a file,
// kept in locked memory, zeroed when it goes. Never copied, never printed:
// messages name its file (origin()), not its bytes.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace rdmastream {

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
    friend struct KeyBytes; // the library's proofs (peer_auth.cpp): the one reader of the bytes
    PresharedKey(std::size_t size, std::string origin);

    unsigned char* bytes_; // sodium_malloc'd: guarded pages, locked when the limit allows
    std::size_t size_;
    std::string origin_;
};

} // namespace rdmastream
