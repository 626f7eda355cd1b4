// SPDX-License-Identifier: LGPL-2.1-or-later
// The pre-shared key: what a key file must be (and the message when it is
// not), and the proofs made with it.
#include "rdmastream/error.hpp"
#include "wire/peer_auth.hpp"

#include <gtest/gtest.h>
#include <sodium.h>

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

// Two paths: the session secret of a stream's first path, the token that
// names the stream to a joining path, and the join proofs.
TEST(SessionSecret, BothEndsOfAPathDeriveTheSameTokenAndProofs) {
    const auto hs = wire::encode(wire::SenderHello{8, true, fresh_nonce()});
    const auto hr = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    const auto a = key_of('a');
    const SessionSecret sender(a.get(), hs, hr), receiver(a.get(), hs, hr);
    EXPECT_EQ(sender.token(), receiver.token());
    const auto js = wire::encode(wire::SenderHello{8, true, fresh_nonce()});
    const auto jr = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    EXPECT_TRUE(same_proof(sender.join_proof(wire::Role::kSender, js, jr),
                           receiver.join_proof(wire::Role::kSender, js, jr)));
}

TEST(SessionSecret, EveryOtherInputGivesAnotherTokenOrProof) {
    const auto hs = wire::encode(wire::SenderHello{8, true, fresh_nonce()});
    const auto hr = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    const auto a = key_of('a'), b = key_of('b');
    const SessionSecret s(a.get(), hs, hr);
    // Another key, no key, another connection's hellos: another stream.
    EXPECT_NE(SessionSecret(b.get(), hs, hr).token(), s.token());
    EXPECT_NE(SessionSecret(nullptr, hs, hr).token(), s.token());
    const auto hr2 = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    EXPECT_NE(SessionSecret(a.get(), hs, hr2).token(), s.token());
    const SessionSecret other(a.get(), hs, hr2); // the same key, another stream
    const auto js = wire::encode(wire::SenderHello{8, true, fresh_nonce()});
    const auto jr = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    const auto proof = s.join_proof(wire::Role::kSender, js, jr);
    // A holder of the key who is not an end of this stream's first path
    // cannot make the proof, nor can the key's own proof stand in for it.
    EXPECT_FALSE(same_proof(other.join_proof(wire::Role::kSender, js, jr), proof));
    const auto key_proof = make_key_proof(*a, wire::Role::kSender, js, jr);
    EXPECT_NE(key_proof.mac, proof.mac);
    // The other role's proof (no reflection), another join's hellos (no replay).
    auto reflected = s.join_proof(wire::Role::kReceiver, js, jr);
    reflected.role = wire::Role::kSender;
    EXPECT_FALSE(same_proof(reflected, proof));
    const auto jr2 = wire::encode(wire::ReceiverHello{8, true, fresh_nonce()});
    EXPECT_FALSE(same_proof(s.join_proof(wire::Role::kSender, js, jr2), proof));
}

// Fixed inputs, fixed outputs: the derivation is what docs/design/two-paths.md
// says, computed here with libsodium's one-shot HMAC, step by step.
TEST(SessionSecret, IsTheDocumentedDerivation) {
    std::vector<std::byte> hs(48, std::byte{0x11}), hr(48, std::byte{0x22});
    const auto key = key_of('k');
    const SessionSecret s(key.get(), hs, hr);
    const std::string session_label("rdmastream session, protocol 7\0", 31);
    std::vector<unsigned char> msg(session_label.begin(), session_label.end());
    msg.insert(msg.end(), 48, 0x11);
    msg.insert(msg.end(), 48, 0x22);
    std::array<unsigned char, 32> secret{}, token{};
    const std::vector<unsigned char> k(32, 'k');
    crypto_auth_hmacsha512256(secret.data(), msg.data(), msg.size(), k.data());
    const std::string token_label("rdmastream session token\0", 25);
    crypto_auth_hmacsha512256(token.data(), reinterpret_cast<const unsigned char*>(token_label.data()),
                              token_label.size(), secret.data());
    for (std::size_t i = 0; i < wire::kSessionTokenSize; ++i) {
        EXPECT_EQ(s.token()[i], std::byte{token[i]}) << i;
    }
    // The join proof: HMAC(S, join label || role || both hellos).
    const std::string join_label("rdmastream join proof, protocol 7\0", 34);
    std::vector<unsigned char> jm(join_label.begin(), join_label.end());
    jm.push_back(2); // receiver
    jm.insert(jm.end(), 48, 0x11);
    jm.insert(jm.end(), 48, 0x22);
    std::array<unsigned char, 32> mac{};
    crypto_auth_hmacsha512256(mac.data(), jm.data(), jm.size(), secret.data());
    const auto proof = s.join_proof(wire::Role::kReceiver, hs, hr);
    for (std::size_t i = 0; i < mac.size(); ++i) {
        EXPECT_EQ(proof.mac[i], std::byte{mac[i]}) << i;
    }
}

TEST(Nonce, IsFreshEveryTime) { EXPECT_NE(fresh_nonce(), fresh_nonce()); }

TEST(KeyBytes, TooShortIsRefused) {
    const std::vector<std::byte> bytes(16, std::byte{1});
    EXPECT_THROW(PresharedKey::from_bytes(bytes, "test"), UserError);
}

} // namespace
} // namespace rdmastream
