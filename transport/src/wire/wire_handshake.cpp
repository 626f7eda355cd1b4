// SPDX-License-Identifier: LGPL-2.1-or-later
// The handshake's messages (docs/protocol.md): the hellos in rdma_cm's
// private data (with a join's flags and session token), the key and join
// proofs and the reject reason.
#include "wire/wire_bytes.hpp"

#include <algorithm>
#include <stdexcept>

namespace rdmastream::wire {

using namespace detail;

namespace {


// Hello layout (both directions): magic, version, flags, a count, reserved,
// nonce; a joining dialler's session token after it.
constexpr std::size_t kHelloFlags = 6, kHelloCount = 8, kHelloReserved = 12, kHelloNonce = 16,
                      kHelloToken = 48;
constexpr std::uint16_t kHelloFlagKey = 1, kHelloFlagJoin = 2, kHelloFlagPathB = 4;
constexpr std::uint16_t kHelloFlagsDefined = kHelloFlagKey | kHelloFlagJoin | kHelloFlagPathB;
static_assert(kHelloNonce + kNonceSize == kSenderHelloSize);
static_assert(kHelloToken + kSessionTokenSize == kJoinHelloSize);

HelloBytes encode_hello(std::uint32_t magic, std::uint32_t count, bool has_key, const Nonce& nonce,
                        const HelloJoin& join) {
    if ((join.path_b || join.token) && !join.join) {
        throw std::invalid_argument("hello: a session token or path B without the join flag");
    }
    HelloBytes out(join.token ? kJoinHelloSize : kSenderHelloSize);
    store_le<std::uint32_t>(out, 0, magic);
    store_le<std::uint16_t>(out, 4, kProtocolVersion);
    const auto flags = static_cast<std::uint16_t>((has_key ? kHelloFlagKey : 0) | (join.join ? kHelloFlagJoin : 0) |
                                                  (join.path_b ? kHelloFlagPathB : 0));
    store_le<std::uint16_t>(out, kHelloFlags, flags);
    store_le<std::uint32_t>(out, kHelloCount, count);
    std::copy(nonce.begin(), nonce.end(), out.begin() + kHelloNonce);
    if (join.token) {
        std::copy(join.token->begin(), join.token->end(), out.begin() + kHelloToken);
    }
    return out;
}

// Checks the flags and reserved bytes, takes the nonce and the join flags;
// returns whether the peer has a key.
bool decode_hello_rest(std::span<const std::byte> bytes, Nonce& nonce, HelloJoin& join, const char* what) {
    const auto flags = load_le<std::uint16_t>(bytes, kHelloFlags);
    if ((flags & ~kHelloFlagsDefined) != 0) {
        throw ProtocolError(fmt::format("{} has unknown flags {:#06x}", what, flags));
    }
    join.join = (flags & kHelloFlagJoin) != 0;
    join.path_b = (flags & kHelloFlagPathB) != 0;
    if (join.path_b && !join.join) {
        throw ProtocolError(fmt::format("{} has flag path B (bit 2) without join (bit 1): only a joining "
                                        "connection is a path",
                                        what));
    }
    check_reserved(bytes, kHelloReserved, kHelloNonce, what, "reserved@12");
    std::copy(bytes.begin() + kHelloNonce, bytes.begin() + kHelloNonce + kNonceSize, nonce.begin());
    return (flags & kHelloFlagKey) != 0;
}

// Key proof layout.
constexpr std::size_t kProofRole = 6, kProofReserved = 7, kProofMac = 8;
static_assert(kProofMac + kMacSize == kKeyProofSize);

} // namespace

const char* name(Role role) noexcept { return role == Role::kSender ? "sender" : "receiver"; }

HelloBytes encode(const SenderHello& hello) {
    return encode_hello(kHelloMagic, hello.max_slots, hello.has_key, hello.nonce, hello.join);
}

SenderHello decode_sender_hello(std::span<const std::byte> bytes) {
    check_magic_and_version(bytes, kSenderHelloSize, kHelloMagic, "sender hello");
    SenderHello h;
    h.max_slots = load_le<std::uint32_t>(bytes, kHelloCount);
    if (h.max_slots == 0) {
        throw ProtocolError("sender hello takes no slots");
    }
    h.has_key = decode_hello_rest(bytes, h.nonce, h.join, "sender hello");
    return h;
}

HelloBytes encode(const ReceiverHello& hello) {
    return encode_hello(kReceiverHelloMagic, hello.slot_count, hello.has_key, hello.nonce, hello.join);
}

ReceiverHello decode_receiver_hello(std::span<const std::byte> bytes) {
    // Up to version 2 a receiver's private data was its ring advert.
    if (bytes.size() >= 6 && load_le<std::uint32_t>(bytes, 0) == kAdvertMagic) {
        check_version(load_le<std::uint16_t>(bytes, 4));
    }
    check_magic_and_version(bytes, kReceiverHelloSize, kReceiverHelloMagic, "receiver hello");
    ReceiverHello h;
    h.slot_count = load_le<std::uint32_t>(bytes, kHelloCount);
    if (h.slot_count == 0 || h.slot_count > kMaxSlots) {
        throw ProtocolError(fmt::format("receiver hello has {} slots (allowed 1..{})", h.slot_count, kMaxSlots));
    }
    h.has_key = decode_hello_rest(bytes, h.nonce, h.join, "receiver hello");
    return h;
}

std::optional<JoinRequest> read_join(Role from, std::span<const std::byte> private_data) {
    const HelloJoin join = from == Role::kSender ? decode_sender_hello(private_data).join
                                                 : decode_receiver_hello(private_data).join;
    if (!join.join) {
        return std::nullopt;
    }
    if (private_data.size() < kJoinHelloSize) {
        throw ProtocolError(fmt::format("{} hello asks to join a stream (flags bit 1) in {} bytes: a join's hello "
                                        "carries the stream's session token at {}..{}, {} bytes",
                                        name(from), private_data.size(), kHelloToken, kJoinHelloSize - 1,
                                        kJoinHelloSize));
    }
    JoinRequest r;
    r.path_b = join.path_b;
    std::copy_n(private_data.begin() + kHelloToken, kSessionTokenSize, r.token.begin());
    return r;
}

namespace {
// A key or join proof (one layout, two magics): its role, checked against
// `from`, and its MAC.
template <class Proof>
Proof decode_proof(std::span<const std::byte> bytes, Role from, std::uint32_t magic, const char* what) {
    check_magic_and_version(bytes, kKeyProofSize, magic, what);
    const auto role = static_cast<std::uint8_t>(bytes[kProofRole]);
    if (role != static_cast<std::uint8_t>(Role::kSender) && role != static_cast<std::uint8_t>(Role::kReceiver)) {
        throw ProtocolError(fmt::format("{} names role {} (1 sender, 2 receiver)", what, role));
    }
    check_reserved(bytes, kProofReserved, kProofMac, what, "reserved@7");
    Proof p;
    p.role = static_cast<Role>(role);
    if (p.role != from) {
        throw ProtocolError(fmt::format("the {} sent a {} made for the {} role: a proof of ours reflected "
                                        "back, not one of its own",
                                        name(from), what, name(p.role)));
    }
    std::copy(bytes.begin() + kProofMac, bytes.begin() + kProofMac + kMacSize, p.mac.begin());
    return p;
}

template <class Proof>
std::array<std::byte, kKeyProofSize> encode_proof(const Proof& proof, std::uint32_t magic) {
    std::array<std::byte, kKeyProofSize> out{};
    store_le<std::uint32_t>(out, 0, magic);
    store_le<std::uint16_t>(out, 4, kProtocolVersion);
    out[kProofRole] = static_cast<std::byte>(proof.role);
    std::copy(proof.mac.begin(), proof.mac.end(), out.begin() + kProofMac);
    return out;
}
static_assert(kJoinProofSize == kKeyProofSize);
} // namespace

std::array<std::byte, kKeyProofSize> encode(const KeyProof& proof) { return encode_proof(proof, kKeyProofMagic); }

KeyProof decode_key_proof(std::span<const std::byte> bytes, Role from) {
    return decode_proof<KeyProof>(bytes, from, kKeyProofMagic, "key proof");
}

std::array<std::byte, kJoinProofSize> encode(const JoinProof& proof) { return encode_proof(proof, kJoinProofMagic); }

JoinProof decode_join_proof(std::span<const std::byte> bytes, Role from) {
    return decode_proof<JoinProof>(bytes, from, kJoinProofMagic, "join proof");
}

std::array<std::byte, kRejectSize> encode(const Reject& reject) {
    std::array<std::byte, kRejectSize> out{};
    store_le<std::uint32_t>(out, 0, kRejectMagic);
    store_le<std::uint16_t>(out, 4, kProtocolVersion);
    store_le<std::uint16_t>(out, 6, static_cast<std::uint16_t>(reject.reason));
    const std::size_t n = std::min(reject.text.size(), kRejectTextMax);
    for (std::size_t i = 0; i < n; ++i) {
        out[8 + i] = static_cast<std::byte>(reject.text[i]);
    }
    return out;
}

std::optional<Reject> decode_reject(std::span<const std::byte> bytes) {
    if (bytes.size() < 8 || load_le<std::uint32_t>(bytes, 0) != kRejectMagic) {
        return std::nullopt;
    }
    Reject r;
    r.reason = static_cast<RejectReason>(load_le<std::uint16_t>(bytes, 6));
    // Text up to the first NUL; anything not printable ASCII is shown as '?'
    // (it came off the wire and goes to a terminal).
    for (std::size_t i = 8; i < bytes.size() && i < 8 + kRejectTextMax; ++i) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0) break;
        r.text.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
    }
    return r;
}

} // namespace rdmastream::wire
