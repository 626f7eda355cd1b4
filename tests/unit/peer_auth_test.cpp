// SPDX-License-Identifier: LGPL-2.1-or-later
// The pre-shared key: what a key file must be (and the message when it is
// not), and the proofs made with it.
#include "rdmastream/error.hpp"
#include "wire/peer_auth.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace rdmastream {
namespace {

// A file in a fresh folder, removed with it.
struct TempKeyFile {
    TempKeyFile() {
        char tmpl[] = "/tmp/rdmastream-key-XXXXXX";
        dir = mkdtemp(tmpl);
        path = dir + "/key";
    }
    ~TempKeyFile() {
        std::remove(path.c_str());
        ::rmdir(dir.c_str());
    }
    void write(std::size_t size, mode_t mode) {
        std::ofstream(path, std::ios::binary) << std::string(size, 'k');
        ::chmod(path.c_str(), mode);
    }
    std::string dir, path;
};

std::string refusal(const std::string& path, std::vector<std::string>* warnings = nullptr) {
    try {
        PresharedKey::from_file(path, [&](const std::string& w) {
            if (warnings) warnings->push_back(w);
        });
    } catch (const UserError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(KeyFile, AGoodOneLoadsQuietly) {
    TempKeyFile f;
    f.write(32, 0600);
    std::vector<std::string> warnings;
    EXPECT_EQ(refusal(f.path, &warnings), "(accepted)");
    EXPECT_TRUE(warnings.empty());
}

TEST(KeyFile, OpenToOthersDrawsAWarning) {
    TempKeyFile f;
    f.write(64, 0644);
    std::vector<std::string> warnings;
    EXPECT_EQ(refusal(f.path, &warnings), "(accepted)");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(f.path), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("chmod 600"), std::string::npos) << warnings[0];
    f.write(64, 0640); // group alone is enough
    warnings.clear();
    refusal(f.path, &warnings);
    EXPECT_EQ(warnings.size(), 1u);
}

TEST(KeyFile, BadOnesAreRefusedNamingTheFile) {
    TempKeyFile f;
    const std::string missing = refusal(f.path);
    EXPECT_NE(missing.find("key file " + f.path + " does not exist"), std::string::npos) << missing;
    EXPECT_NE(missing.find("head -c 32 /dev/urandom"), std::string::npos) << missing;
    f.write(31, 0600);
    const std::string short_one = refusal(f.path);
    EXPECT_NE(short_one.find(f.path + " holds 31 bytes; a key has 32 to 1024"), std::string::npos) << short_one;
    f.write(1025, 0600);
    EXPECT_NE(refusal(f.path).find("holds 1025 bytes"), std::string::npos);
    EXPECT_NE(refusal(f.dir).find("not a regular file"), std::string::npos);
}

std::shared_ptr<const PresharedKey> key_of(char c) {
    const std::vector<std::byte> bytes(32, std::byte(static_cast<unsigned char>(c)));
    return PresharedKey::from_bytes(bytes, std::string("key ") + c);
}

TEST(KeyProof, BindsKeyRoleAndBothHellos) {
    const auto hs = wire::encode(wire::SenderHello{8, true, fresh_nonce()});
    const auto hr = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    const auto a = key_of('a'), b = key_of('b');
    const auto proof = make_key_proof(*a, wire::Role::kSender, hs, hr);
    EXPECT_TRUE(same_proof(make_key_proof(*a, wire::Role::kSender, hs, hr), proof));
    EXPECT_FALSE(same_proof(make_key_proof(*b, wire::Role::kSender, hs, hr), proof)); // another key
    // The receiver's proof over the same hellos differs (no reflection),
    // even with the role field made to match.
    auto other_role = make_key_proof(*a, wire::Role::kReceiver, hs, hr);
    other_role.role = wire::Role::kSender;
    EXPECT_FALSE(same_proof(other_role, proof));
    // Another connection's nonce (no replay).
    const auto hr2 = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    EXPECT_FALSE(same_proof(make_key_proof(*a, wire::Role::kSender, hs, hr2), proof));
}

TEST(Nonce, IsFreshEveryTime) { EXPECT_NE(fresh_nonce(), fresh_nonce()); }

TEST(KeyBytes, TooShortIsRefused) {
    const std::vector<std::byte> bytes(16, std::byte{1});
    EXPECT_THROW(PresharedKey::from_bytes(bytes, "test"), UserError);
}

} // namespace
} // namespace rdmastream
