// SPDX-License-Identifier: LGPL-2.1-or-later
// docs/protocol.md against the code. The page is what a second
// implementation is written from, so every number it states must be the
// compiled one. This test reads the page (its path comes from CMake) and
// checks:
//   * its "Constants" table, row by row, against the code's value: a row
//     the test does not know, a known constant missing from the page, or a
//     value that differs fails;
//   * the message layouts (sender and receiver hello, key proof, ring
//     advert, reject, slot header, stream format): each row's offset and
//     size against where the encoder puts a marker value, the rows tiling
//     the message, and the heading's size;
//   * the handshake's table of message sizes;
//   * what cannot be read as a constant is measured: the key proof's label
//     by recomputing the MAC with libsodium from the page's label (the
//     session secret's, token's and join proof's labels likewise, from a
//     session token and join proofs), a hello's flag bits by encoding, the
//     receives each end posts through a datapath that records them, the
//     reject status that is never retried through worth_retrying.
#include "memory_fabric.hpp"

#include "rdmastream/door.hpp"
#include "rdmastream/endpoint.hpp"
#include "rdmastream/key.hpp"
#include "rdmastream/receiver.hpp"
#include "rdmastream/sender.hpp"
#include "setup/rc_connection.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/frame_sender.hpp"
#include "wire/handshake.hpp"
#include "wire/peer_auth.hpp"
#include "wire/wire.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef RDMASTREAM_PROTOCOL_PAGE
#error "CMake passes the path of docs/protocol.md as RDMASTREAM_PROTOCOL_PAGE"
#endif

namespace rdmastream {
namespace {


// The kernel's, not ours (include/rdma/ib_cm.h, drivers/infiniband/core/
// cma.c): a REQ carries 92 bytes of private data, rdma_cm's struct cma_hdr
// takes 36 of them.
constexpr std::size_t kReqPrivateData = 92 - 36;

// ---------------------------------------------------------------- the page

std::vector<std::string> page_lines() {
    std::ifstream in(RDMASTREAM_PROTOCOL_PAGE);
    if (!in) throw std::runtime_error(std::string("cannot read ") + RDMASTREAM_PROTOCOL_PAGE);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string trim(std::string s) {
    const auto not_space = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    if (s.size() >= 2 && s.front() == '`' && s.back() == '`') s = s.substr(1, s.size() - 2);
    return s;
}

// A table row's cells, trimmed and without surrounding backticks. A '|'
// inside a later cell splits it too: only the first cells are relied on.
std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) out.push_back(trim(cell));
    return out;
}

struct Table {
    std::string heading;                     // the heading line above it
    std::vector<std::vector<std::string>> rows; // without the header and separator
};

// The first table after the first heading that starts with `heading`
// (before the next heading), or the first table whose header's first cell
// is `first_header_cell` when that is given.
std::optional<Table> table(const std::vector<std::string>& lines, const std::string& heading,
                           const std::string& first_header_cell = "") {
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].rfind(heading, 0) != 0) continue;
        Table t{lines[i], {}};
        for (std::size_t j = i + 1; j < lines.size(); ++j) {
            if (lines[j].rfind("#", 0) == 0) break;
            if (lines[j].rfind("|", 0) != 0) continue;
            if (!first_header_cell.empty() && cells(lines[j]).front() != first_header_cell) continue;
            for (std::size_t k = j + 2; k < lines.size() && lines[k].rfind("|", 0) == 0; ++k) {
                t.rows.push_back(cells(lines[k]));
            }
            return t;
        }
        return std::nullopt;
    }
    return std::nullopt;
}

// ------------------------------------------------------- what is measured

// A datapath that records the receives posted through it (their buffer
// lengths) and otherwise is the in-memory fabric's end.
struct Posted {
    std::vector<std::uint32_t> lengths;
};

class RecordingPath final : public Datapath {
public:
    RecordingPath(std::unique_ptr<Datapath> inner, std::shared_ptr<Posted> posted)
        : inner_(std::move(inner)), posted_(std::move(posted)) {}
    PageRegistration register_pages(std::span<std::byte> pages, std::size_t locked, int access) override {
        return inner_->register_pages(pages, locked, access);
    }
    std::unique_ptr<SlotRing> register_ring(std::uint32_t slot_count, std::uint32_t slot_size, bool windows) override {
        return inner_->register_ring(slot_count, slot_size, windows);
    }
    bool has_memory_windows() const override { return inner_->has_memory_windows(); }
    std::string device_name() const override { return inner_->device_name(); }
    void post_send(ibv_send_wr& wr, const char* what) override { inner_->post_send(wr, what); }
    void post_recv(ibv_recv_wr& list, const char* what) override {
        for (const ibv_recv_wr* wr = &list; wr != nullptr; wr = wr->next) {
            std::uint32_t length = 0;
            for (int i = 0; i < wr->num_sge; ++i) length += wr->sg_list[i].length;
            posted_->lengths.push_back(length);
        }
        inner_->post_recv(list, what);
    }
    std::size_t poll(std::span<ibv_wc> out) override { return inner_->poll(out); }
    Waited wait(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) override {
        return inner_->wait(out, deadline);
    }
    std::optional<Waited> begin_sleep(std::span<ibv_wc> out, SleepFds& fds, std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::time_point& wake_at) override {
        return inner_->begin_sleep(out, fds, now, wake_at);
    }
    std::optional<Waited> end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds) override {
        return inner_->end_sleep(out, fds);
    }
    std::optional<CmEvent> next_event() override { return inner_->next_event(); }
    std::optional<CmEvent> wait_event(std::chrono::milliseconds timeout) override {
        return inner_->wait_event(timeout);
    }
    FlushCause flush_cause() override { return inner_->flush_cause(); }
    void stop() noexcept override { inner_->stop(); }
    void disconnect() noexcept override { inner_->disconnect(); }
    std::string peer_name() const override { return inner_->peer_name(); }

private:
    void throw_failure(const ibv_wc& wc, const char* side) override { inner_->fail(wc, side); }
    std::unique_ptr<Datapath> inner_;
    std::shared_ptr<Posted> posted_;
};

std::shared_ptr<const PresharedKey> test_key() {
    std::array<std::byte, 32> bytes{};
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 7 + 1);
    return PresharedKey::from_bytes(bytes, "the test's key");
}

// The receives a Handshake posts when it is made: a founding connection's
// with or without a key, or a joining connection's (no key).
enum class Made { kBare, kKeyed, kJoining };
Posted handshake_receives(wire::Role role, std::uint32_t slots, Made made) {
    harness::MemoryFabric fabric;
    auto posted = std::make_shared<Posted>();
    RecordingPath path(fabric.end(0), posted);
    if (made == Made::kJoining) {
        const auto hs = wire::encode(wire::SenderHello{256, false, {}});
        const auto hr = wire::encode(wire::ReceiverHello{8, false, {}});
        Handshake hs_join(path, role, slots, nullptr,
                          Handshake::Join{std::make_shared<SessionSecret>(nullptr, hs, hr), true, true, ""});
    } else {
        Handshake hs(path, role, slots, made == Made::kKeyed ? test_key() : nullptr);
    }
    return *posted;
}

Posted receiver_receives(std::uint32_t slots) {
    harness::MemoryFabric fabric;
    auto posted = std::make_shared<Posted>();
    RingConfig ring;
    ring.slots = slots;
    ring.slot_size = 4096 + static_cast<std::uint32_t>(wire::kSlotHeaderSize);
    FrameReceiver rx(std::make_unique<RecordingPath>(fabric.end(0), posted), ring);
    return *posted;
}

Posted sender_receives(std::uint32_t slots) {
    harness::MemoryFabric fabric;
    auto posted = std::make_shared<Posted>();
    const wire::RingAdvert advert{slots, 4096 + 64, 0x10000, 0x1234, false, {}};
    FrameSender tx(std::make_unique<RecordingPath>(fabric.end(1), posted), advert, SenderOptions{});
    return *posted;
}

// "n bytes each" when every receive has the same length, else a list.
std::string each(const Posted& p) {
    if (p.lengths.empty()) return "none";
    if (std::all_of(p.lengths.begin(), p.lengths.end(), [&](std::uint32_t l) { return l == p.lengths.front(); })) {
        return fmt::format("{} bytes each", p.lengths.front());
    }
    return fmt::format("lengths {}", fmt::join(p.lengths, ", "));
}

// Whether a connecting end retries a reject with this CM status.
bool retried(int status) {
    CmEvent ev;
    ev.type = RDMA_CM_EVENT_REJECTED;
    ev.status = status;
    return worth_retrying(CmEventError("rejected", std::optional<CmEvent>(std::move(ev))));
}

// What the label checks compute from: test_key()'s bytes and two hellos
// of fixed nonces.
struct LabelInputs {
    std::array<unsigned char, 32> key_bytes{};
    wire::HelloBytes sender_hello, receiver_hello;
};
LabelInputs label_inputs() {
    LabelInputs in;
    for (std::size_t i = 0; i < in.key_bytes.size(); ++i) in.key_bytes[i] = static_cast<unsigned char>(i * 7 + 1);
    wire::Nonce n1{}, n2{};
    n1.fill(std::byte{0x11});
    n2.fill(std::byte{0x22});
    in.sender_hello = wire::encode(wire::SenderHello{256, true, n1});
    in.receiver_hello = wire::encode(wire::ReceiverHello{8, true, n2});
    return in;
}

// The key proof's label, as the page gives it, checked by computing the
// MAC the page describes and comparing it with the code's.
std::string check_proof_label(const std::string& label) {
    const auto key = test_key();
    const auto [key_bytes, sender_hello, receiver_hello] = label_inputs();
    if (sodium_init() < 0) return "sodium_init failed";
    for (const wire::Role role : {wire::Role::kSender, wire::Role::kReceiver}) {
        const wire::KeyProof code = make_key_proof(*key, role, sender_hello, receiver_hello);
        crypto_auth_hmacsha512256_state st;
        crypto_auth_hmacsha512256_init(&st, key_bytes.data(), key_bytes.size());
        crypto_auth_hmacsha512256_update(&st, reinterpret_cast<const unsigned char*>(label.c_str()), label.size() + 1);
        const auto r = static_cast<unsigned char>(role);
        crypto_auth_hmacsha512256_update(&st, &r, 1);
        crypto_auth_hmacsha512256_update(&st, reinterpret_cast<const unsigned char*>(sender_hello.data()),
                                         sender_hello.size());
        crypto_auth_hmacsha512256_update(&st, reinterpret_cast<const unsigned char*>(receiver_hello.data()),
                                         receiver_hello.size());
        std::array<unsigned char, crypto_auth_hmacsha512256_BYTES> mac{};
        crypto_auth_hmacsha512256_final(&st, mac.data());
        if (std::memcmp(mac.data(), code.mac.data(), mac.size()) != 0) {
            return fmt::format("the MAC HMAC-SHA-512-256(key, \"{}\" NUL || role || hellos) is not the code's proof "
                               "for the {} (another label, or another construction)",
                               label, wire::name(role));
        }
    }
    return "";
}

// The value the Constants table gives `name` ("" when it has no such row).
std::string page_constant(const std::string& name);

// The session secret's, token's and join proof's labels, as the page gives
// them: a token and join proofs computed step by step from them (the
// derivation the page states) against the code's. One check for the three:
// only together do they make a token.
std::string check_session_labels() {
    const std::string session = page_constant("kSessionLabel"), token_label = page_constant("kTokenLabel"),
                      join = page_constant("kJoinLabel");
    const auto key = test_key();
    const auto [key_bytes, hs, hr] = label_inputs();
    if (sodium_init() < 0) return "sodium_init failed";
    const auto bytes = [](std::span<const std::byte> b) {
        const auto* p = reinterpret_cast<const unsigned char*>(b.data());
        return std::vector<unsigned char>(p, p + b.size());
    };
    // S = HMAC(K, session label NUL || sender hello || receiver hello)
    std::vector<unsigned char> m(session.begin(), session.end());
    m.push_back(0);
    for (const auto& h : {bytes(hs), bytes(hr)}) m.insert(m.end(), h.begin(), h.end());
    std::array<unsigned char, 32> secret{}, token{};
    crypto_auth_hmacsha512256(secret.data(), m.data(), m.size(), key_bytes.data()); // a 32-byte key
    crypto_auth_hmacsha512256(token.data(), reinterpret_cast<const unsigned char*>(token_label.c_str()),
                              token_label.size() + 1, secret.data());
    const SessionSecret code(key.get(), hs, hr);
    if (std::memcmp(code.token().data(), token.data(), wire::kSessionTokenSize) != 0) {
        return fmt::format("the token, first 8 bytes of HMAC(HMAC(key, \"{}\" NUL || hellos), \"{}\" NUL), is not "
                           "the code's (another label, or another construction)",
                           session, token_label);
    }
    // A join's hellos (the dialler's with the token) and both ends' proofs.
    wire::SessionToken t{};
    std::copy_n(reinterpret_cast<const std::byte*>(token.data()), t.size(), t.begin());
    wire::Nonce n3{}, n4{};
    n3.fill(std::byte{0x33});
    n4.fill(std::byte{0x44});
    const auto js = wire::encode(wire::SenderHello{256, true, n3, {true, true, t}});
    const auto jr = wire::encode(wire::ReceiverHello{8, true, n4, {true, true, std::nullopt}});
    for (const wire::Role role : {wire::Role::kSender, wire::Role::kReceiver}) {
        std::vector<unsigned char> jm(join.begin(), join.end());
        jm.push_back(0);
        jm.push_back(static_cast<unsigned char>(role));
        for (const auto& h : {bytes(js), bytes(jr)}) jm.insert(jm.end(), h.begin(), h.end());
        std::array<unsigned char, 32> mac{};
        crypto_auth_hmacsha512256(mac.data(), jm.data(), jm.size(), secret.data());
        if (std::memcmp(code.join_proof(role, js, jr).mac.data(), mac.data(), mac.size()) != 0) {
            return fmt::format("the join proof HMAC(S, \"{}\" NUL || role || the join's hellos) is not the code's "
                               "for the {} (another label, or another construction)",
                               join, wire::name(role));
        }
    }
    return "";
}

// A hello's flag bits, as the encoder sets them.
std::string hello_flags() {
    const auto flags = [](const wire::SenderHello& h) {
        const auto b = wire::encode(h);
        return std::to_integer<unsigned>(b[6]) | std::to_integer<unsigned>(b[7]) << 8;
    };
    const unsigned none = flags(wire::SenderHello{8, false, {}});
    const unsigned key = flags(wire::SenderHello{8, true, {}});
    const unsigned join = flags(wire::SenderHello{8, false, {}, {true, false, std::nullopt}});
    const unsigned path_b = flags(wire::SenderHello{8, false, {}, {true, true, std::nullopt}}) & ~join;
    if (none != 0) return fmt::format("the code sets flags {:#06x} in a plain hello", none);
    return fmt::format("key {:#06x}, join {:#06x}, path B {:#06x}", key, join, path_b);
}

// --------------------------------------------------------- the constants

// How a value is written on the page.
std::string num(std::uint64_t v) { return std::to_string(v); }
std::string hex4(std::uint64_t v) { return fmt::format("{:#06x}", v); }
std::string wire_bytes(std::uint32_t magic) {
    return fmt::format("{:02x} {:02x} {:02x} {:02x}", magic & 0xff, (magic >> 8) & 0xff, (magic >> 16) & 0xff,
                       magic >> 24);
}
template <typename Rep, typename Period>
std::string duration(std::chrono::duration<Rep, Period> d) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    return ms % 1000 == 0 ? fmt::format("{} s", ms / 1000) : fmt::format("{} ms", ms);
}

std::uint32_t load32(std::span<const std::byte> b, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v |= std::uint32_t{static_cast<std::uint8_t>(b[at + i])} << (8 * i);
    return v;
}

std::uint32_t format_magic() {
    std::array<std::byte, wire::kControlPayloadMax> out{};
    StreamFormat f;
    f.id = 1;
    f.max_frame_size = 64;
    wire::encode(f, std::span<std::byte, wire::kControlPayloadMax>(out));
    return load32(out, 0);
}

// Each known constant: given the page's value, "" when it is the code's,
// else what the code says.
using Check = std::function<std::string(const std::string& page_value)>;

Check is(std::string code_value) {
    return [code_value](const std::string& page) { return page == code_value ? "" : "the code has " + code_value; };
}

std::map<std::string, Check> known_constants() {
    std::map<std::string, Check> k;
    k["wire::kProtocolVersion"] = is(num(wire::kProtocolVersion));
    k["wire::kHelloMagic"] = is(wire_bytes(wire::kHelloMagic));
    k["wire::kReceiverHelloMagic"] = is(wire_bytes(wire::kReceiverHelloMagic));
    k["wire::kKeyProofMagic"] = is(wire_bytes(wire::kKeyProofMagic));
    k["wire::kJoinProofMagic"] = is(wire_bytes(wire::kJoinProofMagic));
    k["wire::kAdvertMagic"] = is(wire_bytes(wire::kAdvertMagic));
    k["wire::kFormatMagic"] = is(wire_bytes(format_magic()));
    k["wire::kSlotMagic"] = is(wire_bytes(wire::kSlotMagic));
    k["wire::kRejectMagic"] = is(wire_bytes(wire::kRejectMagic));
    k["wire::kSenderHelloSize"] = is(num(wire::kSenderHelloSize));
    k["wire::kReceiverHelloSize"] = is(num(wire::kReceiverHelloSize));
    k["wire::kNonceSize"] = is(num(wire::kNonceSize));
    k["hello flags"] = is(hello_flags());
    k["wire::kSessionTokenSize"] = is(num(wire::kSessionTokenSize));
    k["wire::kJoinHelloSize"] = is(num(wire::kJoinHelloSize));
    k["IB_CM_REQ_PRIVATE_DATA_SIZE - sizeof(struct cma_hdr)"] = is(num(kReqPrivateData));
    k["wire::kKeyProofSize"] = is(num(wire::kKeyProofSize));
    k["wire::kJoinProofSize"] = is(num(wire::kJoinProofSize));
    k["wire::kMacSize"] = is(num(wire::kMacSize));
    k["kProofLabel"] = [](const std::string& page) { return check_proof_label(page); };
    k["kSessionLabel"] = [](const std::string&) { return check_session_labels(); };
    k["kTokenLabel"] = [](const std::string&) { return check_session_labels(); };
    k["kJoinLabel"] = [](const std::string&) { return check_session_labels(); };
    k["wire::Role::kSender"] = is(num(static_cast<unsigned>(wire::Role::kSender)));
    k["wire::Role::kReceiver"] = is(num(static_cast<unsigned>(wire::Role::kReceiver)));
    k["PresharedKey::kMinBytes"] = is(num(PresharedKey::kMinBytes));
    k["PresharedKey::kMaxBytes"] = is(num(PresharedKey::kMaxBytes));
    k["wire::kRejectSize"] = is(num(wire::kRejectSize));
    k["wire::kRejectTextMax"] = is(num(wire::kRejectTextMax));
    k["wire::RejectReason::kProtocol"] = is(num(static_cast<unsigned>(wire::RejectReason::kProtocol)));
    k["wire::RejectReason::kConfig"] = is(num(static_cast<unsigned>(wire::RejectReason::kConfig)));
    k["wire::RejectReason::kResources"] = is(num(static_cast<unsigned>(wire::RejectReason::kResources)));
    k["wire::RejectReason::kBusy"] = is(num(static_cast<unsigned>(wire::RejectReason::kBusy)));
    k["IB_CM_REJ_CONSUMER_DEFINED"] = [](const std::string& page) -> std::string {
        // The one CM reject status a connecting end never retries.
        std::vector<int> final_statuses;
        for (int s = 0; s < 64; ++s) {
            if (!retried(s)) final_statuses.push_back(s);
        }
        const std::string code = fmt::format("{}", fmt::join(final_statuses, ", "));
        return page == code ? "" : "the code never retries a reject of status " + code;
    };
    k["wire::kRingAdvertSize"] = is(num(wire::kRingAdvertSize));
    k["wire::kWindowKeySize"] = is(num(wire::kWindowKeySize));
    k["wire::ring_advert_size(slots, windows)"] = [](const std::string& page) -> std::string {
        for (const std::uint32_t s : {1u, 7u, 256u, 4096u}) {
            if (wire::ring_advert_size(s, true) != 32 + 4 * std::size_t{s} || wire::ring_advert_size(s, false) != 32) {
                return fmt::format("the code's sizes for {} slots are {} and {}", s, wire::ring_advert_size(s, true),
                                   wire::ring_advert_size(s, false));
            }
        }
        return page == "windows ? 32 + 4 * slots : 32" ? "" : "the code computes windows ? 32 + 4 * slots : 32";
    };
    k["wire::kMaxSlots"] = is(num(wire::kMaxSlots));
    k["kMaxSenderSlots"] = is(num(kMaxSenderSlots));
    k["kMaxFlows"] = is(num(kMaxFlows));
    k["ReceiverConfig::flow_slots"] = is(num(ReceiverConfig{}.flow_slots));
    k["ReceiverConfig::max_flows"] = is(num(ReceiverConfig{}.max_flows));
    k["wire::kMaxSlotSize"] = is(num(wire::kMaxSlotSize));
    k["wire::kSlotHeaderSize"] = is(num(wire::kSlotHeaderSize));
    k["kFrameFlagsDefined"] = is(hex4(kFrameFlagsDefined));
    k["wire::kCreditSize"] = is(num(wire::kCreditSize));
    k["wire::kControlSlot"] = is(hex4(wire::kControlSlot));
    k["wire::Control::kEndOfStream"] = is(num(static_cast<unsigned>(wire::Control::kEndOfStream)));
    k["wire::Control::kKeepalive"] = is(num(static_cast<unsigned>(wire::Control::kKeepalive)));
    k["wire::Control::kFormat"] = is(num(static_cast<unsigned>(wire::Control::kFormat)));
    k["wire::Control::kRing"] = is(num(static_cast<unsigned>(wire::Control::kRing)));
    k["wire::Control::kCredits"] = is(num(static_cast<unsigned>(wire::Control::kCredits)));
    k["wire::Control::kAuth"] = is(num(static_cast<unsigned>(wire::Control::kAuth)));
    k["wire::Control::kLeaving"] = is(num(static_cast<unsigned>(wire::Control::kLeaving)));
    k["wire::Control::kClock"] = is(num(static_cast<unsigned>(wire::Control::kClock)));
    k["wire::Control::kJoin"] = is(num(static_cast<unsigned>(wire::Control::kJoin)));
    k["wire::kClockMagic"] = is(wire_bytes(wire::kClockMagic));
    k["wire::kClockSize"] = is(num(wire::kClockSize));
    k["wire::kControlPayloadMax"] = is(num(wire::kControlPayloadMax));
    k["kMaxPlanes"] = is(num(kMaxPlanes));
    k["kMaxCapsLength"] = is(num(kMaxCapsLength));
    k["kMaxCapsNesting"] = is(num(kMaxCapsNesting));
    k["kMaxSideDataBytes"] = is(num(kMaxSideDataBytes));
    k["kDefaultSideDataBytes"] = is(num(kDefaultSideDataBytes));
    k["kSideDataEntryHead"] = is(num(kSideDataEntryHead));
    k["kMaxSideDataEntries"] = is(num(kMaxSideDataEntries));
    k["SideDataKind::kCaptions"] = is(num(static_cast<unsigned>(SideDataKind::kCaptions)));
    k["SideDataKind::kTimecode"] = is(num(static_cast<unsigned>(SideDataKind::kTimecode)));
    k["SideDataKind::kMasteringDisplay"] = is(num(static_cast<unsigned>(SideDataKind::kMasteringDisplay)));
    k["SideDataKind::kContentLight"] = is(num(static_cast<unsigned>(SideDataKind::kContentLight)));
    // A joining connection posts what a keyed one does: its join proof's
    // receive in the key proof's place.
    const auto receives = [](wire::Role role, std::uint32_t slots) {
        return [role, slots](const std::string& page) -> std::string {
            const Posted bare = handshake_receives(role, slots, Made::kBare);
            const Posted keyed = handshake_receives(role, slots, Made::kKeyed);
            const Posted joining = handshake_receives(role, slots, Made::kJoining);
            if (joining.lengths != keyed.lengths) {
                return fmt::format("a joining {} posts {} receives, {}; a keyed one {}, {}", wire::name(role),
                                   joining.lengths.size(), each(joining), keyed.lengths.size(), each(keyed));
            }
            return is(fmt::format("{} + {} with a key or joining, {}", bare.lengths.size(),
                                  keyed.lengths.size() - bare.lengths.size(), each(keyed)))(page);
        };
    };
    k["Handshake: sender's receives"] = receives(wire::Role::kSender, kMaxSenderSlots);
    k["Handshake: receiver's receives"] = receives(wire::Role::kReceiver, 8);
    k["FrameReceiver: receives"] = [](const std::string& page) -> std::string {
        for (const std::uint32_t s : {1u, 4u, 8u}) {
            const Posted p = receiver_receives(s);
            const std::string code = fmt::format("slots + {}, {}", p.lengths.size() - s, each(p));
            if (page != code) return fmt::format("with {} slots the code posts: {}", s, code);
        }
        return "";
    };
    k["FrameSender: receives"] = [](const std::string& page) -> std::string {
        // max(32 + 4 * 256, 8 * 256): a credits message of every slot a
        // sender takes, or an advert with a window key for each.
        const std::size_t size = std::max(32 + 4 * std::size_t{kMaxSenderSlots}, 8 * std::size_t{kMaxSenderSlots});
        const std::string formula = fmt::format("slots, {} bytes each", size);
        if (page != formula) return "the code posts " + formula;
        for (const std::uint32_t s : {1u, 3u, 4u, 5u, 8u, 256u}) {
            const Posted p = sender_receives(s);
            const std::string code = fmt::format("{} receives, {}", p.lengths.size(), each(p));
            const std::string want = fmt::format("{} receives, {} bytes each", s, size);
            if (code != want) return fmt::format("with {} slots the code posts {}", s, code);
        }
        return "";
    };
    k["kDefaultPort"] = is(num(kDefaultPort));
    k["ConnectionOptions::step_timeout"] = is(duration(ConnectionOptions{}.step_timeout));
    k["ConnectionOptions::establish_timeout"] = is(duration(ConnectionOptions{}.establish_timeout));
    k["Handshake::kPatience"] = is(duration(Handshake::kPatience));
    k["ReceiverConfig::handshake_timeout"] = is(duration(ReceiverConfig{}.handshake_timeout));
    k["ConnectionOptions::ack_timeout"] = is(num(ConnectionOptions{}.ack_timeout));
    k["ConnectionOptions::retry_count"] = is(num(ConnectionOptions{}.retry_count));
    k["ConnectionOptions::rnr_retry"] = is(num(ConnectionOptions{}.rnr_retry));
    k["SenderOptions::keepalive"] = is(duration(SenderOptions{}.keepalive));
    k["SenderOptions::ack_limit"] = is(duration(SenderOptions{}.ack_limit));
    k["kMaxPending"] = is(num(PendingLimits{}.total));
    k["kMaxPendingPerAddress"] = is(num(PendingLimits{}.per_address));
    return k;
}

std::string page_constant(const std::string& name) {
    const auto t = table(page_lines(), "## Constants");
    for (const auto& row : t ? t->rows : std::vector<std::vector<std::string>>{}) {
        if (row.size() >= 2 && row[0] == name) return row[1];
    }
    return "";
}

TEST(ProtocolPage, ConstantsTableIsTheCode) {
    const auto lines = page_lines();
    const auto t = table(lines, "## Constants");
    ASSERT_TRUE(t) << "docs/protocol.md has no \"## Constants\" table";
    const auto known = known_constants();
    std::set<std::string> seen;
    for (const auto& row : t->rows) {
        ASSERT_GE(row.size(), 2u);
        const std::string& name = row[0];
        const auto it = known.find(name);
        if (it == known.end()) {
            ADD_FAILURE() << "docs/protocol.md's Constants names `" << name
                          << "`, which this test does not know: teach it (tests/unit/protocol_page_test.cpp) where "
                             "the code keeps it";
            continue;
        }
        EXPECT_TRUE(seen.insert(name).second) << "`" << name << "` is in the table twice";
        const std::string wrong = it->second(row[1]);
        EXPECT_EQ(wrong, "") << "docs/protocol.md says `" << name << "` is `" << row[1] << "`: " << wrong;
    }
    for (const auto& [name, check] : known) {
        EXPECT_TRUE(seen.count(name) != 0) << "docs/protocol.md's Constants lacks `" << name << "`";
    }
    static_assert(wire::kSenderHelloSize <= kReqPrivateData && wire::kReceiverHelloSize <= kReqPrivateData,
                  "a hello must fit a connect request's private data");
    static_assert(wire::kJoinHelloSize == kReqPrivateData, "a joining dialler's hello fills a connect request's");
}

// ------------------------------------------------------------ the layouts

// A field's expected bytes at its offset: an integer (little-endian, the
// row's size, 1 to 8 bytes) or a byte string (the row's size, or a size
// written as text, e.g. "n").
struct Expect {
    std::optional<std::uint64_t> value;
    std::vector<std::byte> bytes;
    std::string size_text; // for a size that is not a number
};
Expect u(std::uint64_t v) { return {v, {}, {}}; }
Expect raw(std::vector<std::byte> b, std::string size_text = "") { return {std::nullopt, std::move(b), std::move(size_text)}; }

template <typename Bytes>
std::vector<std::byte> vec(const Bytes& b) {
    return std::vector<std::byte>(b.begin(), b.end());
}
std::vector<std::byte> le32s(std::initializer_list<std::uint32_t> words) {
    std::vector<std::byte> out;
    for (const std::uint32_t w : words) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>((w >> (8 * i)) & 0xff));
    }
    return out;
}

struct Message {
    std::string heading;        // "### Sender hello"
    std::vector<std::byte> bytes; // as encoded
    std::optional<std::size_t> size; // fixed size, if it has one
    std::map<std::string, Expect> fields;
};

std::vector<Message> messages() {
    std::vector<Message> m;
    wire::Nonce nonce_a{}, nonce_b{};
    for (std::size_t i = 0; i < nonce_a.size(); ++i) {
        nonce_a[i] = static_cast<std::byte>(0x40 + i);
        nonce_b[i] = static_cast<std::byte>(0x80 + i);
    }
    m.push_back({"### Sender hello", vec(wire::encode(wire::SenderHello{0x01020304, true, nonce_a})),
                 wire::kSenderHelloSize,
                 {{"magic", u(wire::kHelloMagic)},
                  {"version", u(wire::kProtocolVersion)},
                  {"flags", u(1)},
                  {"max_slots", u(0x01020304)},
                  {"reserved@12", u(0)},
                  {"nonce", raw(vec(nonce_a))}}});
    m.push_back({"### Receiver hello", vec(wire::encode(wire::ReceiverHello{0x0a0b, true, nonce_b})),
                 wire::kReceiverHelloSize,
                 {{"magic", u(wire::kReceiverHelloMagic)},
                  {"version", u(wire::kProtocolVersion)},
                  {"flags", u(1)},
                  {"slot_count", u(0x0a0b)},
                  {"reserved@12", u(0)},
                  {"nonce", raw(vec(nonce_b))}}});
    wire::SessionToken token{};
    for (std::size_t i = 0; i < token.size(); ++i) token[i] = static_cast<std::byte>(0xe0 + i);
    const auto join_hello = wire::encode(wire::SenderHello{0x01020304, true, nonce_a, {true, true, token}});
    const auto plain_part = vec(join_hello);
    m.push_back({"### A joining dialler's hello", vec(join_hello), wire::kJoinHelloSize,
                 {{"hello", raw({plain_part.begin(), plain_part.begin() + static_cast<long>(wire::kSenderHelloSize)})},
                  {"session_token", raw(vec(token))}}});
    EXPECT_EQ(load32(join_hello, 4) >> 16, 1u | 2u | 4u) << "a joining dialler's hello: flags key, join, path B";
    // The key and join proofs: one layout, two magics.
    const auto proof_message = [](const char* heading, const std::array<std::byte, wire::kKeyProofSize>& bytes,
                                  std::uint32_t magic, wire::Role role, const std::array<std::byte, wire::kMacSize>& mac) {
        return Message{heading,
                       vec(bytes),
                       wire::kKeyProofSize,
                       {{"magic", u(magic)},
                        {"version", u(wire::kProtocolVersion)},
                        {"role", u(static_cast<unsigned>(role))},
                        {"reserved@7", u(0)},
                        {"mac", raw(vec(mac))}}};
    };
    wire::KeyProof proof{wire::Role::kReceiver, {}};
    for (std::size_t i = 0; i < proof.mac.size(); ++i) proof.mac[i] = static_cast<std::byte>(0xc0 + i);
    m.push_back(proof_message("### Key proof", wire::encode(proof), wire::kKeyProofMagic, proof.role, proof.mac));
    wire::JoinProof join_proof{wire::Role::kSender, {}};
    for (std::size_t i = 0; i < join_proof.mac.size(); ++i) join_proof.mac[i] = static_cast<std::byte>(0x90 + i);
    static_assert(wire::kJoinProofSize == wire::kKeyProofSize);
    m.push_back(proof_message("### Join proof", wire::encode(join_proof), wire::kJoinProofMagic, join_proof.role,
                              join_proof.mac));
    const wire::RingAdvert plain{3, 0x12345, 0x1122334455667788, 0xcafef00d, true, {}};
    const wire::RingAdvert windowed{3, 0x12345, 0x1122334455667788, 0, false, {0x11111111, 0x22222222, 0x33333333}};
    const auto windowed_bytes = wire::encode(windowed);
    m.push_back({"### Ring advert", wire::encode(plain), wire::kRingAdvertSize,
                 {{"magic", u(wire::kAdvertMagic)},
                  {"version", u(wire::kProtocolVersion)},
                  {"flags", u(1)}, // live
                  {"slot_count", u(3)},
                  {"slot_size", u(0x12345)},
                  {"addr", u(0x1122334455667788)},
                  {"rkey", u(0xcafef00d)},
                  {"flow", u(0)},
                  {"reserved@29", u(0)},
                  {"slot_base", u(0)},
                  // checked in the windowed advert's bytes, below
                  {"window keys", raw(le32s({0x11111111, 0x22222222, 0x33333333}), "4 x slot_count")}}});
    EXPECT_EQ(load32(windowed_bytes, 4) >> 16, 2u) << "a windowed advert's flags: bit 1, windows";
    EXPECT_TRUE(std::equal(windowed_bytes.begin() + 32, windowed_bytes.end(), le32s({0x11111111, 0x22222222, 0x33333333}).begin()));
    std::vector<std::byte> text(wire::kRejectTextMax, std::byte{0});
    const std::string busy = "busy now";
    for (std::size_t i = 0; i < busy.size(); ++i) text[i] = static_cast<std::byte>(busy[i]);
    m.push_back({"### Reject", vec(wire::encode(wire::Reject{wire::RejectReason::kBusy, busy})), wire::kRejectSize,
                 {{"magic", u(wire::kRejectMagic)},
                  {"version", u(wire::kProtocolVersion)},
                  {"reason", u(static_cast<unsigned>(wire::RejectReason::kBusy))},
                  {"text", raw(text)}}});
    wire::SlotHeader h{};
    h.sequence = 0x0102030405060708;
    h.pts = -5;
    h.duration = 0x1111;
    h.payload_size = 0x2222;
    h.flags = 0x000b;
    h.imm = wire::SlotImm{0x0304, 0x0506};
    h.format_id = 0x0708;
    h.flow = 9;
    h.sent_at_ns = 0x0a0b0c0d0e0f1011;
    h.side_data_size = 0x0c0d;
    std::array<std::byte, wire::kSlotHeaderSize> header{};
    wire::encode(h, std::span<std::byte, wire::kSlotHeaderSize>(header));
    m.push_back({"### Slot header", vec(header), wire::kSlotHeaderSize,
                 {{"magic", u(wire::kSlotMagic)},
                  {"header_size", u(wire::kSlotHeaderSize)},
                  {"flags", u(0x000b)},
                  {"sequence", u(0x0102030405060708)},
                  {"pts", u(static_cast<std::uint64_t>(std::int64_t{-5}))},
                  {"duration", u(0x1111)},
                  {"payload_size", u(0x2222)},
                  {"slot", u(0x0304)},
                  {"generation", u(0x0506)},
                  {"format_id", u(0x0708)},
                  {"flow", u(9)},
                  {"reserved@43", u(0)},
                  {"side_data_size", u(0x0c0d)},
                  {"sent_at", u(0x0a0b0c0d0e0f1011)},
                  {"reserved@56", u(0)}}});
    const ClockAnchor anchor{AnchorClock::kTai, -0x0102030405060708, true};
    m.push_back({"### Clock anchor", vec(wire::encode(anchor)), wire::kClockSize,
                 {{"magic", u(wire::kClockMagic)},
                  {"version", u(wire::kProtocolVersion)},
                  {"clock", u(2)},
                  {"flags", u(1)},
                  {"pts0", u(static_cast<std::uint64_t>(std::int64_t{-0x0102030405060708}))},
                  {"reserved@16", u(0)}}});
    StreamFormat f;
    f.id = 0x0102;
    f.plane_count = 2;
    f.max_frame_size = 0x30000;
    f.planes[0] = {0x10, 0x20};
    f.planes[1] = {0x1000, 0x40};
    f.max_side_data = 0x1234;
    f.caps = "video/x-raw";
    f.flow = 3;
    std::array<std::byte, wire::kControlPayloadMax> fmt_out{};
    const std::size_t fmt_size = wire::encode(f, std::span<std::byte, wire::kControlPayloadMax>(fmt_out));
    std::vector<std::byte> caps;
    for (const char c : f.caps) caps.push_back(static_cast<std::byte>(c));
    m.push_back({"### Stream format", std::vector<std::byte>(fmt_out.begin(), fmt_out.begin() + static_cast<long>(fmt_size)),
                 std::nullopt,
                 {{"magic", u(format_magic())},
                  {"version", u(wire::kProtocolVersion)},
                  {"flow", u(3)},
                  {"reserved@7", u(0)},
                  {"format_id", u(0x0102)},
                  {"plane_count", u(2)},
                  {"reserved@11", u(0)},
                  {"max_frame_size", u(0x30000)},
                  {"planes", raw(le32s({0x10, 0x20, 0x1000, 0x40, 0, 0, 0, 0}))},
                  {"max_side_data", u(0x1234)},
                  {"caps_length", u(f.caps.size())},
                  {"caps", raw(caps, "n")}}});
    return m;
}

std::optional<std::size_t> number(const std::string& s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
        return std::nullopt;
    }
    return std::stoul(s);
}

std::uint64_t load_le(const std::vector<std::byte>& b, std::size_t at, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(b[at + i])} << (8 * i);
    return v;
}

TEST(ProtocolPage, MessageLayoutsAreTheEncoders) {
    const auto lines = page_lines();
    for (const Message& msg : messages()) {
        SCOPED_TRACE(msg.heading);
        const auto t = table(lines, msg.heading);
        ASSERT_TRUE(t) << "docs/protocol.md has no table under a heading \"" << msg.heading << "\"";
        if (msg.size) { // "### Sender hello (48 bytes)": the heading's size
            const auto open = t->heading.find('(');
            ASSERT_NE(open, std::string::npos) << "the heading gives no size: " << t->heading;
            EXPECT_EQ(number(t->heading.substr(open + 1, t->heading.find(' ', open) - open - 1)), *msg.size)
                << t->heading;
            EXPECT_EQ(msg.bytes.size(), *msg.size) << "the encoder's size";
        }
        std::set<std::string> seen;
        std::size_t next = 0; // where the next row must start
        for (const auto& row : t->rows) {
            ASSERT_GE(row.size(), 3u);
            const auto offset = number(row[0]);
            const std::string& field = row[2];
            ASSERT_TRUE(offset) << "row " << field << ": offset " << row[0];
            EXPECT_EQ(*offset, next) << "row " << field << " does not start where the row before it ends";
            const auto it = msg.fields.find(field);
            if (it == msg.fields.end()) {
                ADD_FAILURE() << "the page has a field `" << field << "` the test does not know";
                continue;
            }
            seen.insert(field);
            const Expect& e = it->second;
            const auto size = number(row[1]);
            if (!size) { // a size in words: the rest of the message
                EXPECT_EQ(row[1], e.size_text) << "field " << field;
                if (field != "window keys") { // those are in another encoding (a windowed advert)
                    ASSERT_LE(*offset + e.bytes.size(), msg.bytes.size());
                    EXPECT_TRUE(std::equal(e.bytes.begin(), e.bytes.end(), msg.bytes.begin() + static_cast<long>(*offset)))
                        << "field " << field << " is not at offset " << *offset;
                } else {
                    EXPECT_EQ(*offset, wire::kRingAdvertSize);
                }
                next = SIZE_MAX;
                continue;
            }
            ASSERT_LE(*offset + *size, msg.bytes.size()) << "field " << field << " runs past the message";
            if (e.value) {
                ASSERT_TRUE(*size >= 1 && *size <= 8) << "field " << field << ": an integer of 1 to 8 bytes";
                EXPECT_EQ(load_le(msg.bytes, *offset, *size), *e.value)
                    << "field " << field << " (offset " << *offset << ", " << *size << " bytes) is not where the "
                    << "encoder puts it";
            } else {
                EXPECT_EQ(*size, e.bytes.size()) << "field " << field << "'s size";
                EXPECT_TRUE(std::equal(e.bytes.begin(), e.bytes.end(), msg.bytes.begin() + static_cast<long>(*offset)))
                    << "field " << field << " is not at offset " << *offset;
            }
            next = *offset + *size;
        }
        if (msg.size && next != SIZE_MAX) {
            EXPECT_EQ(next, *msg.size) << "the rows do not cover the message";
        }
        for (const auto& [name, e] : msg.fields) {
            EXPECT_TRUE(seen.count(name) != 0) << "the page's table lacks field `" << name << "`";
        }
    }
}

TEST(ProtocolPage, HandshakeMessageSizes) {
    const auto lines = page_lines();
    const auto t = table(lines, "## Handshake", "message");
    ASSERT_TRUE(t) << "docs/protocol.md's Handshake section has no table of messages";
    const std::map<std::string, std::size_t> want = {{"sender hello", wire::kSenderHelloSize},
                                                     {"receiver hello", wire::kReceiverHelloSize},
                                                     {"key proof", wire::kKeyProofSize},
                                                     {"joining dialler's hello", wire::kJoinHelloSize},
                                                     {"join proof", wire::kJoinProofSize},
                                                     {"ring advert", wire::kRingAdvertSize},
                                                     {"reject", wire::kRejectSize}};
    std::set<std::string> seen;
    for (const auto& row : t->rows) {
        ASSERT_GE(row.size(), 3u);
        const auto it = want.find(row[0]);
        if (it == want.end()) {
            ADD_FAILURE() << "the handshake's table names a message the test does not know: " << row[0];
            continue;
        }
        seen.insert(row[0]);
        EXPECT_EQ(row.back(), fmt::format("{} B", it->second)) << row[0];
    }
    EXPECT_EQ(seen.size(), want.size()) << "the handshake's table lacks a message";
}

} // namespace
} // namespace rdmastream
