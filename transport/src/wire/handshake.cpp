// SPDX-License-Identifier: LGPL-2.1-or-later
#include "wire/handshake.hpp"
#include "wire/work_id.hpp"

#include "rdmastream/error.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

namespace {
constexpr std::size_t kRecvBuffers = 2; // a proof (key or join) and an advert at most
constexpr std::size_t kSendAt = kRecvBuffers; // the send buffer's index

wire::HelloBytes our_hello(wire::Role role, std::uint32_t slots, bool has_key, const wire::HelloJoin& join) {
    const wire::Nonce nonce = fresh_nonce();
    return role == wire::Role::kSender ? wire::encode(wire::SenderHello{slots, has_key, nonce, join})
                                       : wire::encode(wire::ReceiverHello{slots, has_key, nonce, join});
}

wire::HelloJoin hello_join(const std::optional<Handshake::Join>& join) {
    wire::HelloJoin j;
    if (join && !join->secret) {
        throw std::invalid_argument("Handshake: a join without the stream's session secret");
    }
    if (join) {
        j.join = true;
        j.path_b = join->path_b;
        if (join->dials) j.token = join->secret->token();
    }
    return j;
}

const char* letter(bool path_b) noexcept { return path_b ? "B" : "A"; }

// A join request whose token names no stream this end serves.
UserError unknown_token(const std::optional<wire::SessionToken>& token, const std::string& peer_label) {
    std::string hex;
    for (const std::byte b : token.value_or(wire::SessionToken{})) {
        hex += fmt::format("{:02x}", static_cast<unsigned>(b));
    }
    return UserError(fmt::format("no stream here has session token {}: it ended, or {} is not its peer",
                                 token ? hex : "(none)", peer_label));
}

// The peer's hello (role: ours), decoded and checked, and its key flag
// against ours.
struct PeerHello {
    std::uint32_t slots = 0;
    wire::HelloJoin join;
};
PeerHello decode_peer_hello(wire::Role role, bool have_key, std::span<const std::byte> private_data,
                            const std::string& peer_label) {
    bool peer_has_key = false;
    PeerHello out;
    if (role == wire::Role::kReceiver) {
        const wire::SenderHello h = wire::decode_sender_hello(private_data);
        peer_has_key = h.has_key;
        out.slots = h.max_slots;
        out.join = h.join;
    } else {
        const wire::ReceiverHello h = wire::decode_receiver_hello(private_data);
        peer_has_key = h.has_key;
        out.slots = h.slot_count;
        out.join = h.join;
    }
    if (have_key && !peer_has_key) {
        throw UserError(fmt::format("{} has no key but this {} requires one: give both ends the same key file "
                                    "(--key-file)",
                                    peer_label, wire::name(role)));
    }
    if (!have_key && peer_has_key) {
        throw UserError(fmt::format("{} has a key but this {} has none: give both ends the same key file "
                                    "(--key-file)",
                                    peer_label, wire::name(role)));
    }
    return out;
}
} // namespace

Handshake::Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key)
    : Handshake(path, role, slots, std::move(key), std::optional<Join>()) {}

Handshake::Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key,
                     Join join)
    : Handshake(path, role, slots, std::move(key), std::optional<Join>(std::move(join))) {}

Handshake::Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key,
                     std::optional<Join> join)
    : path_(path),
      role_(role),
      key_(std::move(key)),
      join_(std::move(join)),
      hello_(our_hello(role, slots, key_ != nullptr, hello_join(join_))),
      buffer_(std::max<std::size_t>(64, role == wire::Role::kSender ? wire::ring_advert_size(slots, true) : 0)),
      region_(path_.register_memory((kRecvBuffers + 1) * buffer_, IBV_ACCESS_LOCAL_WRITE)) {
    // What the peer sends before we may act: its proof (a join's, or the
    // key's with a key), and for a sender the ring advert. Exactly these,
    // so none is left posted for a stream end's message to land in.
    const std::size_t recvs = (proves() ? 1 : 0) + (role_ == wire::Role::kSender ? 1 : 0);
    for (std::size_t i = 0; i < recvs; ++i) {
        post_recv(i);
    }
}

Handshake::~Handshake() {
    if (!done_ && (recvs_done_ < recvs_posted_ || (proof_posted_ && !proof_acked_))) {
        path_.stop(); // the NIC lets go of region_ before it is deregistered
    }
}

wire::Role Handshake::peer_role() const noexcept {
    return role_ == wire::Role::kSender ? wire::Role::kReceiver : wire::Role::kSender;
}

std::string Handshake::peer_label() const { return fmt::format("the {} {}", wire::name(peer_role()), peer_); }

void Handshake::post_recv(std::uint64_t buffer) {
    ibv_sge sge{region_.addr() + buffer * buffer_, static_cast<std::uint32_t>(buffer_), region_.lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = work_id(Work::kHandshakeRecv, buffer);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    path_.post_recv(wr, "ibv_post_recv(handshake)");
    ++recvs_posted_;
}

std::uint32_t Handshake::check_peer_hello(wire::Role role, bool have_key, std::span<const std::byte> private_data,
                                          const std::string& peer_label) {
    const PeerHello h = decode_peer_hello(role, have_key, private_data, peer_label);
    if (h.join.join) {
        throw ProtocolError(fmt::format("{} asks to join a running stream (as its path {}), but this {}'s "
                                        "connection opens a new stream: it takes no join here",
                                        peer_label, letter(h.join.path_b), wire::name(role)));
    }
    return h.slots;
}

Handshake::ScreenedJoin Handshake::screen_join(wire::Role role, bool have_key,
                                               std::span<const std::shared_ptr<const SessionSecret>> streams,
                                               std::span<const std::byte> private_data,
                                               const std::string& peer_label) {
    const wire::Role peer = role == wire::Role::kSender ? wire::Role::kReceiver : wire::Role::kSender;
    const std::optional<wire::JoinRequest> request = wire::read_join(peer, private_data);
    if (!request) {
        throw ProtocolError(fmt::format("{} asks for a new stream, not to join one", peer_label));
    }
    ScreenedJoin out;
    out.peer_slots = decode_peer_hello(role, have_key, private_data, peer_label).slots;
    out.path_b = request->path_b;
    for (const auto& s : streams) {
        if (s && s->token() == request->token) {
            out.secret = s;
            return out;
        }
    }
    throw unknown_token(request->token, peer_label);
}

void Handshake::take_peer_hello(std::span<const std::byte> private_data, std::string peer) {
    peer_ = std::move(peer);
    if (join_) {
        take_join_hello(private_data);
    } else {
        peer_slots_ = check_peer_hello(role_, key_ != nullptr, private_data, peer_label());
        // Decoded, so at least a hello's bytes: the proofs cover exactly those.
        peer_hello_ = wire::HelloBytes(wire::kSenderHelloSize);
    }
    std::copy_n(private_data.begin(), peer_hello_.size(), peer_hello_.begin());
    have_peer_hello_ = true;
}

void Handshake::take_join_hello(std::span<const std::byte> private_data) {
    const PeerHello h = decode_peer_hello(role_, key_ != nullptr, private_data, peer_label());
    const char* ours = letter(join_->path_b);
    if (!h.join.join) {
        throw ProtocolError(fmt::format("{}'s hello opens a new stream, but this {}'s connection joins a running one "
                                        "as its path {}",
                                        peer_label(), wire::name(role_), ours));
    }
    if (h.join.path_b != join_->path_b) {
        throw ProtocolError(fmt::format("{} takes this connection for the stream's path {}, this {} for its path {}",
                                        peer_label(), letter(h.join.path_b), wire::name(role_), ours));
    }
    if (join_->dials) {
        peer_hello_ = wire::HelloBytes(wire::kSenderHelloSize); // the listener's: no token
    } else {
        // Screened already (screen_join); checked again, so that a join is
        // never proven under another stream's secret.
        const std::optional<wire::JoinRequest> request = wire::read_join(peer_role(), private_data);
        if (!request || request->token != join_->secret->token()) {
            throw unknown_token(request ? std::optional(request->token) : std::nullopt, peer_label());
        }
        peer_hello_ = wire::HelloBytes(wire::kJoinHelloSize); // the dialler's, its token included
    }
    peer_slots_ = h.slots;
}

std::span<const std::byte> Handshake::sender_hello() const noexcept {
    return role_ == wire::Role::kSender ? hello_ : peer_hello_;
}

std::span<const std::byte> Handshake::receiver_hello() const noexcept {
    return role_ == wire::Role::kSender ? peer_hello_ : hello_;
}

std::unique_ptr<SessionSecret> Handshake::session_secret() const {
    if (join_) {
        throw std::logic_error("Handshake::session_secret: a founding connection's (a join has its stream's)");
    }
    if (!done_) {
        throw std::logic_error("Handshake::session_secret: once through");
    }
    return std::make_unique<SessionSecret>(key_.get(), sender_hello(), receiver_hello());
}

const wire::RingAdvert& Handshake::ring() const {
    if (!ring_) {
        throw std::logic_error("Handshake::ring: a sender's, once through");
    }
    return *ring_;
}

void Handshake::post_proof() {
    const auto bytes = join_ ? wire::encode(join_->secret->join_proof(role_, sender_hello(), receiver_hello()))
                             : wire::encode(make_key_proof(*key_, role_, sender_hello(), receiver_hello()));
    const auto out = region_.bytes().subspan(kSendAt * buffer_, buffer_);
    std::copy(bytes.begin(), bytes.end(), out.begin());
    ibv_sge sge{region_.addr() + kSendAt * buffer_, static_cast<std::uint32_t>(bytes.size()), region_.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = work_id(Work::kHandshakeSend);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(wire::encode(join_ ? wire::Control::kJoin : wire::Control::kAuth));
    wr.send_flags = IBV_SEND_SIGNALED;
    path_.post_send(wr, join_ ? "ibv_post_send(join proof)" : "ibv_post_send(key proof)");
    proof_posted_ = true;
}

bool Handshake::through() const noexcept {
    return (!proves() || (proof_acked_ && peer_proved_)) && (role_ == wire::Role::kReceiver || ring_.has_value());
}

bool Handshake::step() {
    if (done_) {
        return true;
    }
    if (!have_peer_hello_) {
        throw std::logic_error("Handshake::step before take_peer_hello");
    }
    if (proves() && !proof_posted_) {
        post_proof(); // at once, without waiting for the peer's: each end then learns a mismatch itself
    }
    drain();
    if (!through()) {
        if (std::optional<CmEvent> ev = path_.next_event()) {
            lost(*ev);
        }
    }
    done_ = through();
    return done_;
}

void Handshake::run(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!step()) {
        Waited w = path_.wait(wcs_, deadline);
        switch (w.kind) {
        case Waited::kCompletions:
            handle_batch(w.completions);
            break;
        case Waited::kCmEvent: lost(*w.event);
        case Waited::kWoken: break; // a stream end's wake: nothing to do for it yet
        case Waited::kTimeout:
            if (Clock::now() >= deadline) {
                time_out(timeout);
            }
            break;
        }
    }
}

void Handshake::time_out(std::chrono::milliseconds allowed) const {
    const char* what = !proves() || peer_proved_ ? "ring advert" : join_ ? "join proof" : "key proof";
    throw TimeoutError(fmt::format("{} sent no {} within {} ms: it hangs, or is not rdmastream protocol {}",
                                   peer_label(), what, allowed.count(), wire::kProtocolVersion));
}

void Handshake::drain() {
    for (;;) {
        const std::size_t n = path_.poll(wcs_);
        handle_batch(n);
        if (n < wcs_.size()) return;
    }
}

void Handshake::handle_batch(std::size_t n) {
    // Our proof's acknowledgement first: the peer's proof may come before
    // it in the same batch (the harness's fabric polls receives first), and
    // a refusal of that proof must not then wait for an acknowledgement
    // already taken off the queue (wait_for_our_proof).
    for (std::size_t i = 0; i < n; ++i) {
        if (wcs_[i].status == IBV_WC_SUCCESS && wcs_[i].wr_id == work_id(Work::kHandshakeSend)) proof_acked_ = true;
    }
    for (std::size_t i = 0; i < n; ++i) handle(wcs_[i]);
}

void Handshake::handle(const ibv_wc& wc) {
    if (wc.status != IBV_WC_SUCCESS) {
        // Most likely the peer refused us and hung up: its hang-up says so.
        if (std::optional<CmEvent> ev = path_.wait_event(std::chrono::milliseconds(200))) {
            lost(*ev);
        }
        path_.fail(wc, wire::name(role_));
    }
    const WorkId id = decode_work_id(wc.wr_id);
    if (id.work == Work::kHandshakeSend) {
        proof_acked_ = true;
        return;
    }
    if (id.work != Work::kHandshakeRecv || wc.opcode != IBV_WC_RECV || id.index >= recvs_posted_) {
        throw ProtocolError(fmt::format("{} wrote into this {}'s memory during the handshake (completion opcode {})",
                                        peer_label(), wire::name(role_), static_cast<int>(wc.opcode)));
    }
    ++recvs_done_;
    if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
        throw ProtocolError(fmt::format("{} sent a message without an immediate during the handshake", peer_label()));
    }
    const auto bytes = region_.bytes().subspan(id.index * buffer_, std::min<std::size_t>(wc.byte_len, buffer_));
    switch (const wire::Control kind = wire::decode_control(ntohl(wc.imm_data))) {
    case wire::Control::kAuth: take_proof(bytes); return;
    case wire::Control::kJoin: take_join_proof(bytes); return;
    case wire::Control::kRing: take_ring(bytes); return;
    default:
        throw ProtocolError(fmt::format("{} sent control message {} during the handshake (only key or join proofs "
                                        "and the ring advert belong there)",
                                        peer_label(), static_cast<int>(kind)));
    }
}

void Handshake::take_proof(std::span<const std::byte> bytes) {
    if (!key_ || join_ || peer_proved_) {
        throw ProtocolError(fmt::format("{} sent a key proof this end did not ask for", peer_label()));
    }
    const wire::KeyProof got = wire::decode_key_proof(bytes, peer_role());
    if (!same_proof(got, make_key_proof(*key_, peer_role(), sender_hello(), receiver_hello()))) {
        wait_for_our_proof();
        throw UserError(fmt::format("{}'s key does not match ours ({}): give both ends the same key file",
                                    peer_label(), key_->origin()));
    }
    peer_proved_ = true;
}

void Handshake::take_join_proof(std::span<const std::byte> bytes) {
    if (!join_ || peer_proved_) {
        throw ProtocolError(fmt::format("{} sent a join proof this end did not ask for", peer_label()));
    }
    const wire::JoinProof got = wire::decode_join_proof(bytes, peer_role());
    if (!same_proof(got, join_->secret->join_proof(peer_role(), sender_hello(), receiver_hello()))) {
        wait_for_our_proof();
        const bool b = join_->path_b;
        throw UserError(fmt::format("path {}: {} is not the peer of this stream's path {}{}: its join proof does not "
                                    "match",
                                    letter(b), peer_label(), letter(!b),
                                    join_->stream_peer.empty() ? "" : " (" + join_->stream_peer + ")"));
    }
    peer_proved_ = true;
}

void Handshake::take_ring(std::span<const std::byte> bytes) {
    if (role_ != wire::Role::kSender) {
        throw ProtocolError(fmt::format("{} sent a ring advert: only receivers send those", peer_label()));
    }
    if (ring_) {
        throw ProtocolError(fmt::format("{} sent a second ring advert during the handshake", peer_label()));
    }
    if (proves() && !peer_proved_) {
        throw ProtocolError(fmt::format("{} sent its ring advert before {}", peer_label(),
                                        join_ ? "its join proof" : "proving the key"));
    }
    const wire::RingAdvert ring = wire::decode_ring_advert(bytes);
    if (ring.slot_count != peer_slots_) {
        throw ProtocolError(fmt::format("{} advertised a ring of {} slots, its hello said {}", peer_label(),
                                        ring.slot_count, peer_slots_));
    }
    ring_ = ring;
}

void Handshake::wait_for_our_proof() {
    // The peer learns of the mismatch from our proof: hanging up before it
    // left would leave the peer only "hung up during the handshake".
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    while (proof_posted_ && !proof_acked_ && Clock::now() < deadline) {
        Waited w = path_.wait(wcs_, deadline);
        for (std::size_t i = 0; w.kind == Waited::kCompletions && i < w.completions; ++i) {
            if (wcs_[i].wr_id == work_id(Work::kHandshakeSend)) proof_acked_ = true;
        }
        if (w.kind == Waited::kCmEvent) return;
    }
}

void Handshake::lost(const CmEvent& ev) {
    // A proof that came before the hang-up explains it better (a key
    // mismatch); what the hang-up flushed explains nothing.
    for (std::size_t n = wcs_.size(); n == wcs_.size();) {
        n = path_.poll(wcs_);
        for (std::size_t i = 0; i < n; ++i) {
            if (wcs_[i].status == IBV_WC_SUCCESS) handle(wcs_[i]);
        }
    }
    if (ev.type == RDMA_CM_EVENT_DISCONNECTED) {
        throw ConnectionError(fmt::format("{} hung up during the handshake{}", peer_label(),
                                          join_  ? ": it may have refused our join (its log says why)"
                                          : key_ ? ": it may have refused our key (its log says why)"
                                                 : ""));
    }
    throw ConnectionError(
        fmt::format("connection to {} lost during the handshake: {}", peer_label(), explain_lost_connection(ev)));
}

} // namespace rdmastream
