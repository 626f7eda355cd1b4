// SPDX-License-Identifier: LGPL-2.1-or-later
// The wire format: what travels between sender and receiver, and the
// decoders that validate it. docs/protocol.md is the normative description;
// keep the two in step.
//
// Everything is little-endian with explicit offsets (never a struct memcpy'd
// off the wire). Every decoder throws ProtocolError with the reason on input
// it refuses, naming the field; reserved bits and bytes must be zero.
#pragma once

#include "rdmastream/clock_anchor.hpp"
#include "rdmastream/format.hpp"
#include "rdmastream/frame.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream::wire {

inline constexpr std::uint32_t kAdvertMagic = 0x534d4452; // "RDMS" read as bytes
inline constexpr std::uint32_t kSlotMagic = 0x464d4452;   // "RDMF"
inline constexpr std::uint32_t kHelloMagic = 0x484d4452;  // "RDMH"
inline constexpr std::uint32_t kRejectMagic = 0x584d4452; // "RDMX"
inline constexpr std::uint32_t kReceiverHelloMagic = 0x524d4452; // "RDMR"
inline constexpr std::uint32_t kKeyProofMagic = 0x504d4452;      // "RDMP"
inline constexpr std::uint32_t kJoinProofMagic = 0x4a4d4452;     // "RDMJ"
// 7: two paths: a connection may join a running stream as its second
// path (hello flags bits 1 join and 2 path B; a joining dialler's hello
// carries the stream's session token at 48..55; a join proof, kJoin, in
// place of the key proof).
// 6: flows: a stream carries up to kMaxFlows flows, each with its own
// format (its flow id at offset 6), its own range of ring slots (a ring
// advert per flow: flow id at 28, first slot at 30) and frame numbers; the
// slot header names the frame's flow (offset 42).
// 5: per-frame side data after a frame's payload (its size in the slot
// header at offset 44; the format declares its bound, at offset 48). 4: memory windows: every credit carries the rkey the sender writes that
// slot with, and the ring advert each slot's first one. 3: hellos both ways
// with nonces, key proofs, and the ring advert as the receiver's first
// message once the connection is up (never in the rdma_cm private data). 2:
// credits travel coalesced, as a kCredits control message
// listing slots (version 1 sent one SEND per slot with the slot in the
// immediate).
inline constexpr std::uint16_t kProtocolVersion = 7;

// Limits a decoder enforces; a peer advertising more is refused.
inline constexpr std::uint32_t kMaxSlots = 4096;        // slot index fits 16 bits with room
inline constexpr std::uint64_t kMaxSlotSize = kMaxSlotBytes; // 1 GiB
inline constexpr std::size_t kSlotHeaderSize = kSlotHeaderBytes;
using rdmastream::kMaxFlows;

// The two ends of a stream, as the handshake names them (the byte that
// key proofs bind, so that one end's proof never passes for the other's).
enum class Role : std::uint8_t { kSender = 1, kReceiver = 2 };
const char* name(Role role) noexcept; // "sender", "receiver"

// A hello's fresh random bytes: each end's proof covers both ends' nonces,
// so no proof is good for another connection.
inline constexpr std::size_t kNonceSize = 32;
using Nonce = std::array<std::byte, kNonceSize>;

// Two paths (docs/design/two-paths.md, decision 1): the 8 bytes that name a
// running stream to a connection joining it as its second path, derived by
// both ends of the first path from its hellos (peer_auth.hpp:
// SessionSecret). A joining dialler's hello carries it.
inline constexpr std::size_t kSessionTokenSize = 8;
using SessionToken = std::array<std::byte, kSessionTokenSize>;

// What a hello says of a join (flags bit 1 join, bit 2 path B). A
// connection that joins a running stream says so in both hellos: the
// dialler's asks, and carries the stream's session token at bytes 48..55
// (its hello is then 56 bytes, all a connect request carries); the
// listener's echoes the flags (48 bytes). Without the join flag bytes
// 48..55 are padding, as before version 7.
struct HelloJoin {
    bool join = false;   // flags bit 1: this connection joins a running stream
    bool path_b = false; // flags bit 2, with join only: the dialler's second path
    // The dialler's only; encoded at 48..55 (join required). The decoders
    // leave it empty (they cannot tell a token from an accept's padding):
    // a listener reads it with read_join.
    std::optional<SessionToken> token{};
};

// Sender -> receiver, in the private data of whichever rdma_cm message the
// sender sends (connect or accept). Fits the 56 bytes a connect request takes.
struct SenderHello {
    std::uint32_t max_slots = 0; // the largest ring this sender's queues take
    bool has_key = false;        // this sender authenticates with a pre-shared key
    Nonce nonce{};
    HelloJoin join{};
};
inline constexpr std::size_t kSenderHelloSize = 48;
// A joining dialler's hello, its session token included.
inline constexpr std::size_t kJoinHelloSize = kSenderHelloSize + kSessionTokenSize;

// A hello as sent: 48 bytes, or 56 for a joining dialler's (kJoinHelloSize).
// The proofs and the session secret cover exactly these bytes. A
// contiguous range: it passes as a std::span of its size.
class HelloBytes {
public:
    HelloBytes() = default;
    explicit HelloBytes(std::size_t size) noexcept : size_(size <= kJoinHelloSize ? size : kJoinHelloSize) {}

    std::size_t size() const noexcept { return size_; }
    std::byte* data() noexcept { return bytes_.data(); }
    const std::byte* data() const noexcept { return bytes_.data(); }
    std::byte* begin() noexcept { return bytes_.data(); }
    std::byte* end() noexcept { return bytes_.data() + size_; }
    const std::byte* begin() const noexcept { return bytes_.data(); }
    const std::byte* end() const noexcept { return bytes_.data() + size_; }
    std::byte& operator[](std::size_t i) noexcept { return bytes_[i]; }
    const std::byte& operator[](std::size_t i) const noexcept { return bytes_[i]; }

private:
    std::array<std::byte, kJoinHelloSize> bytes_{};
    std::size_t size_ = kSenderHelloSize;
};
// Throws std::invalid_argument for a token or path B without join.
HelloBytes encode(const SenderHello& hello);
// Refuses, besides the fields' ranges, unknown flags and path B without join.
SenderHello decode_sender_hello(std::span<const std::byte> bytes);

// Receiver -> sender, the same way. Only the ring's slot count: its address
// and rkey come later, in the ring advert, once the sender proved the key.
struct ReceiverHello {
    std::uint32_t slot_count = 0; // the ring's; its advert must say the same
    bool has_key = false;
    Nonce nonce{};
    HelloJoin join{};
};
inline constexpr std::size_t kReceiverHelloSize = 48;
static_assert(kReceiverHelloSize == kSenderHelloSize);
HelloBytes encode(const ReceiverHello& hello);
// A version 2 receiver's ring advert here is refused for its version.
ReceiverHello decode_receiver_hello(std::span<const std::byte> bytes);

// A join as a listener's screen reads it from a connect request's private
// data, before anything is made for the request.
struct JoinRequest {
    SessionToken token{};
    bool path_b = false;
};
// The join the dialler's hello asks for (the hello of the end in role
// `from`: a sender's or a receiver's), nullopt when its join flag is clear.
// The whole hello is decoded and checked as decode_sender_hello or
// decode_receiver_hello does; a join flag in fewer than kJoinHelloSize
// bytes (no room for the token) is refused too.
std::optional<JoinRequest> read_join(Role from, std::span<const std::byte> private_data);

// Either end, during the handshake (a kAuth control message): the MAC,
// under the pre-shared key, of the two hellos and the role of the end that
// sends it (peer_auth.hpp).
inline constexpr std::size_t kMacSize = 32;
struct KeyProof {
    Role role = Role::kSender; // whose proof this is
    std::array<std::byte, kMacSize> mac{};
};
inline constexpr std::size_t kKeyProofSize = 40;
std::array<std::byte, kKeyProofSize> encode(const KeyProof& proof);
// Refuses a proof that claims a role other than `from` (ours, reflected).
KeyProof decode_key_proof(std::span<const std::byte> bytes, Role from);

// Either end of a joining connection (a kJoin control message, in place of
// the key proof): the MAC, under the session secret of
// the stream it joins, of the joining connection's two hellos and the role
// of the end that sends it. The key proof's layout with its own magic, so
// that neither passes for the other.
struct JoinProof {
    Role role = Role::kSender;
    std::array<std::byte, kMacSize> mac{};
};
inline constexpr std::size_t kJoinProofSize = 40;
std::array<std::byte, kJoinProofSize> encode(const JoinProof& proof);
// Refuses a proof that claims a role other than `from` (ours, reflected).
JoinProof decode_join_proof(std::span<const std::byte> bytes, Role from);

// Either side refusing a connection: the rdma_reject private data, a reason
// a person can read. Fits the 148 bytes an IB CM REJ carries.
enum class RejectReason : std::uint16_t { kProtocol = 1, kConfig = 2, kResources = 3, kBusy = 4 };
inline constexpr std::size_t kRejectSize = 148;
inline constexpr std::size_t kRejectTextMax = kRejectSize - 8;
struct Reject {
    RejectReason reason = RejectReason::kProtocol;
    std::string text;
};
std::array<std::byte, kRejectSize> encode(const Reject& reject);
// nullopt when the bytes are not an rdmastream reject (e.g. a CM's own).
std::optional<Reject> decode_reject(std::span<const std::byte> bytes);

// Receiver -> sender: a kRing control message, one per flow's range of
// slots: flow 0's is the receiver's first message once the connection is up
// (and the sender proved the key, where there is one); another flow's
// answers that flow's first format, and a flow's again whenever its slots
// grow. A flow's slots are slot_base..slot_base+slot_count-1 of the one
// slot numbering the immediates and credits use; each range is its own
// registered memory (addr, rkey), with its own slot size. Without memory windows it is 32 bytes and
// every slot is written with `rkey` (decoders accept padding after them);
// with windows (flags bit 1) `rkey` is 0, since the ring has no remote
// access of its own, and slot_count 4-byte keys follow, each the rkey of
// the window bound over that slot for its first frame.
struct RingAdvert {
    std::uint32_t slot_count = 0;
    std::uint32_t slot_size = 0; // bytes per slot, header included
    std::uint64_t addr = 0;      // remote virtual address of slot 0
    std::uint32_t rkey = 0;      // the whole ring's region; 0 with windows
    bool live = false; // the receiver asks for the live policy (drop, never wait)
    // With windows: slot_count keys, slot s's first window; empty: none.
    std::vector<std::uint32_t> slot_rkeys{};
    std::uint8_t flow = 0;       // whose range this is
    std::uint16_t slot_base = 0; // its first slot in the stream's numbering

    bool windows() const noexcept { return !slot_rkeys.empty(); }
    // The key the range's slot s (0-based in the range) is first written with.
    std::uint32_t first_rkey(std::uint32_t slot) const noexcept { return windows() ? slot_rkeys[slot] : rkey; }
};
inline constexpr std::size_t kRingAdvertSize = 32; // without the window keys
inline constexpr std::size_t kWindowKeySize = 4;
// The kRing message's size: 32 bytes, plus the window keys with windows.
constexpr std::size_t ring_advert_size(std::uint32_t slot_count, bool windows) noexcept {
    return kRingAdvertSize + (windows ? std::size_t{slot_count} * kWindowKeySize : 0);
}

// Into `out` (at least ring_advert_size bytes); returns the bytes used.
std::size_t encode(const RingAdvert& advert, std::span<std::byte> out);
// The same, allocated (tests, tools: not the receiver's own path).
using RingAdvertBytes = std::vector<std::byte>;
RingAdvertBytes encode(const RingAdvert& advert);
// Refuses, besides the fields' ranges (a flow id below kMaxFlows, a range
// within kMaxSlots): with windows a non-zero rkey or fewer than slot_count
// keys.
RingAdvert decode_ring_advert(std::span<const std::byte> bytes);

// The 32-bit immediate of a frame's WRITE_WITH_IMM, and one entry of a
// kCredits message: low 16 bits slot index, high 16 bits the slot's
// generation (how many frames that slot has carried, mod 2^16), so a stale or
// forged index is caught. Host order here; the verbs field is big-endian.
struct SlotImm {
    std::uint16_t slot = 0;
    std::uint16_t generation = 0;
};
std::uint32_t encode(SlotImm imm) noexcept;
// Refuses slot >= slot_count.
SlotImm decode_slot_imm(std::uint32_t value, std::uint32_t slot_count);

// Control messages: a SEND_WITH_IMM whose immediate has slot field 0xffff
// (never a slot: kMaxSlots is far below) and the message kind in the high
// 16 bits. The receiver tells them from frames by the completion's opcode
// (RECV, not RECV_RDMA_WITH_IMM).
enum class Control : std::uint16_t {
    kEndOfStream = 1, // sender -> receiver, no payload
    kKeepalive = 2,   // sender -> receiver, no payload
    kFormat = 3,      // sender -> receiver, payload: a StreamFormat
    kRing = 4,        // receiver -> sender, payload: a RingAdvert for the new ring
    kCredits = 5,     // receiver -> sender, payload: the credits (see encode_credits)
    kAuth = 6,        // either way, during the handshake only, payload: a KeyProof
    kLeaving = 7,     // receiver -> sender, no payload: it has every frame it wants and hangs up next
    kClock = 8,       // sender -> receiver, payload: a ClockAnchor (the instant of pts 0)
    kJoin = 9,        // either way, during a joining connection's handshake only, payload: a JoinProof
};
inline constexpr std::uint16_t kControlSlot = 0xffff;
std::uint32_t encode(Control kind) noexcept;
// Refuses a value that is not a known control message.
Control decode_control(std::uint32_t value);

// A kCredits payload: every slot the receiver's consumer released since its
// last credit message, each as 8 little-endian bytes: the 32-bit SlotImm
// (the slot and the generation its next frame must carry), then the rkey
// the sender writes that frame with (the window bound over the slot for it,
// or without windows the ring's rkey); 1..slot_count entries.
struct Credit {
    SlotImm imm;
    std::uint32_t rkey = 0;
};
inline constexpr std::size_t kCreditSize = 8;
// Into `out` (credits.size() * kCreditSize bytes); returns the bytes used.
std::size_t encode_credits(std::span<const Credit> credits, std::span<std::byte> out) noexcept;
// Into `out` (at least slot_count entries); returns how many. Refuses a
// length that is not a whole number of 1..slot_count entries, or a slot out
// of range. Ownership, generations and keys are the caller's to check.
std::size_t decode_credits(std::span<const std::byte> bytes, std::uint32_t slot_count, std::span<Credit> out);

// How the frames of a stream look: format.hpp (public), named here too.
using rdmastream::kMaxCapsLength;
using rdmastream::kMaxCapsNesting;
using rdmastream::kMaxPlanes;
using rdmastream::PlaneLayout;
using rdmastream::StreamFormat;
inline constexpr std::size_t kControlPayloadMax = 1024; // receive buffer per control message
// Into `out` (kControlPayloadMax bytes); returns the bytes used.
std::size_t encode(const StreamFormat& format, std::span<std::byte, kControlPayloadMax> out);
StreamFormat decode_stream_format(std::span<const std::byte> bytes);

// A kClock payload: which instant of an absolute clock the stream's pts 0
// is (rdmastream/clock_anchor.hpp), sent before the first frame and again
// when the sender's clock is stepped; frames after it are on it.
inline constexpr std::uint32_t kClockMagic = 0x4b4d4452; // "RDMK"
inline constexpr std::size_t kClockSize = 24;
using rdmastream::AnchorClock;
using rdmastream::ClockAnchor;
std::array<std::byte, kClockSize> encode(const ClockAnchor& anchor) noexcept;
// Refuses a size other than kClockSize, an unknown clock, reserved bits.
ClockAnchor decode_clock(std::span<const std::byte> bytes);

// The header at the start of every slot, written by the same RDMA write as
// the payload that follows it at offset kSlotHeaderSize.
// Frame flags (SlotHeader::flags): frame.hpp's kFrame* bits. The other
// bits are reserved: sent as zero, refused if set.
using rdmastream::kFrameFlagsDefined;
struct SlotHeader {
    std::uint64_t sequence = 0;
    std::int64_t pts = 0;
    std::int64_t duration = 0;
    std::uint32_t payload_size = 0;
    std::uint16_t flags = 0;
    SlotImm imm; // repeats the immediate: a mismatch means a torn or stale slot
    std::uint16_t format_id = 0; // the StreamFormat this frame is in; 0: none announced
    // The sender's wall clock (CLOCK_REALTIME, ns since the epoch) when it
    // posted the frame; 0: not given. Only for one-way latency, and only
    // meaningful where both clocks are synchronised (PTP, NTP, the test bed).
    std::uint64_t sent_at_ns = 0;
    // Bytes of side data (side_data_wire.hpp) after the payload; 0: none.
    std::uint32_t side_data_size = 0;
    std::uint8_t flow = 0; // the frame's flow: its slot's range must be that flow's
};
void encode(const SlotHeader& header, std::span<std::byte, kSlotHeaderSize> out) noexcept;
// Refuses a bad magic or header size, reserved flags or bytes that are not
// zero, a payload (with its side data) that does not fit slot_size, or an imm that differs from
// the one the completion carried.
SlotHeader decode_slot_header(std::span<const std::byte> slot, SlotImm expected_imm);

} // namespace rdmastream::wire
