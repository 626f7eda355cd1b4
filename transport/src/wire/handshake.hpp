// SPDX-License-Identifier: LGPL-2.1-or-later
// The connection handshake (since protocol 3; wire::kProtocolVersion is
// the version spoken), one end's side (docs/protocol.md#handshake):
//   1. a hello each way in the rdma_cm private data: the protocol version,
//      the slots, whether this end has a key, a fresh nonce. A key on one
//      end only is refused here, by the listening end, with a reject that
//      says which end lacks it;
//   2. once connected, where both ends have a key: each sends its key proof
//      (kAuth) at once and checks the peer's;
//   3. the receiver sends its ring advert (kRing: the ring's address and
//      rkey) only after the sender's proof checked out, and the sender takes
//      it only after the receiver's did.
// A connection that joins a running stream as its second path (since
// protocol 7, docs/design/two-paths.md decision 1) says so in both hellos,
// the dialler's with the stream's session token; in step 2 each end sends
// its join proof (kJoin, under the stream's session secret, with or without
// a key) in place of the key proof, and step 3 waits for it as it waits for
// the key proof. A listener screens a join's connect request with
// screen_join, and a stream's first connection with check_peer_hello, which
// refuses a join.
// It runs over any Datapath (verbs, or the tests' in-memory fabric) with a
// small region of its own, and posts its receives when it is made: make it
// before the connection is, since the peer may send at once. Once a
// Handshake is through, every work request it posted has completed.
//
// Thread rule: the thread that drives the stream end drives its Handshake.
#pragma once

#include "datapath/datapath.hpp"
#include "wire/peer_auth.hpp"
#include "wire/wire.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace rdmastream {

class Handshake {
public:
    // How long connect/accept give steps 2 and 3 once connected: the
    // receiver registers its ring in between (seconds for a large ring on
    // a loaded host), and a silent peer must still not hold an end forever.
    static constexpr std::chrono::seconds kPatience{30};

    // `slots`: a sender's largest ring, a receiver's slot count. `key` may
    // be null (no authentication; then the peer must have none either).
    // This connection founds a stream (its first path).
    Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key);

    // A connection joining a running stream, the stream's other connection
    // being its founding one (either end may dial both).
    struct Join {
        // The stream's: its founding connection's session_secret() (at the
        // listener, what screen_join found for the request).
        std::shared_ptr<const SessionSecret> secret;
        bool path_b = true; // the dialler's second path (hello flags bit 2); false: its path A joins B's stream
        bool dials = false; // this end dials: its hello asks to join and carries the token
        std::string stream_peer; // for messages: the founding connection's peer, "198.18.0.2:40122" (may be empty)
    };
    // A joining connection: `key` only sets our hello's key flag (and the
    // peer's must match it); no key proof goes, the join proof stands for
    // it (the secret is derived under the key).
    Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key,
              Join join);
    // Unfinished, it stops the datapath first, so nothing lands in its
    // region after it goes.
    ~Handshake();
    Handshake(const Handshake&) = delete;
    Handshake& operator=(const Handshake&) = delete;

    // Our hello: the private data to connect or accept with.
    std::span<const std::byte> hello() const noexcept { return hello_; }
    // The peer's hello (its private data; padding after it is ignored).
    // Throws ProtocolError for a bad one, UserError when only one end has a
    // key (the message names which). `peer` names it in messages. A join's
    // must ask to join (or answer a join) for the same path, and a joining
    // dialler's carry the token of the stream's secret (UserError if not).
    void take_peer_hello(std::span<const std::byte> private_data, std::string peer);
    // The checks take_peer_hello makes of a founding connection's peer,
    // without a connection: a listener screens a connect request's private
    // data with it before anything is made for the request. `role`: this
    // end's; `have_key`: whether it has one. Refuses a hello that asks to
    // join (or, from a listener, answers as to a join). Returns the peer's
    // slots.
    static std::uint32_t check_peer_hello(wire::Role role, bool have_key, std::span<const std::byte> private_data,
                                          const std::string& peer_label);

    // A listener's screen of a joining connection's request (its hello
    // asks to join: wire::read_join), before anything is made for it: the
    // hello as check_peer_hello checks it, then its token against the
    // session tokens of `streams` (the streams this listener serves now).
    // Throws UserError naming the token when none has it, as for a key on
    // one end only; ProtocolError for a bad hello or one that asks no join.
    struct ScreenedJoin {
        std::shared_ptr<const SessionSecret> secret; // the stream's whose token it carries: for Join::secret
        bool path_b = false;                         // for Join::path_b
        std::uint32_t peer_slots = 0;
    };
    static ScreenedJoin screen_join(wire::Role role, bool have_key,
                                    std::span<const std::shared_ptr<const SessionSecret>> streams,
                                    std::span<const std::byte> private_data, const std::string& peer_label);
    // After take_peer_hello: the peer's slots (a sender's largest ring, a
    // receiver's slot count).
    std::uint32_t peer_slots() const noexcept { return peer_slots_; }

    // Once connected: the proofs, then (a sender) the ring advert. step()
    // never blocks and says whether this end is through; run() waits up to
    // `timeout` until it is. Both throw UserError when the peer's key
    // differs or its join proof does not match (it is not the peer of the
    // stream's other connection), ProtocolError for anything else refused,
    // TimeoutError, and what a lost connection means.
    bool step();
    void run(std::chrono::milliseconds timeout);
    // The TimeoutError of a handshake not through within `allowed`, naming
    // what the peer has not sent (a caller that drives step() itself).
    [[noreturn]] void time_out(std::chrono::milliseconds allowed) const;
    // A sender's, once through: the receiver's ring advert.
    const wire::RingAdvert& ring() const;
    // A founding connection's, once through: the stream's session secret,
    // from the two hellos as sent (under the key, if any), for the
    // connections that join the stream later (Join::secret) and its token.
    std::unique_ptr<SessionSecret> session_secret() const;
    // A joining connection's join (its stream's secret: which stream it
    // joined); nullopt for a founding one.
    const std::optional<Join>& join() const noexcept { return join_; }

private:
    Handshake(Datapath& path, wire::Role role, std::uint32_t slots, std::shared_ptr<const PresharedKey> key,
              std::optional<Join> join);
    bool proves() const noexcept { return join_ || key_; } // step 2 has proofs
    std::span<const std::byte> sender_hello() const noexcept;
    std::span<const std::byte> receiver_hello() const noexcept;
    void take_join_hello(std::span<const std::byte> private_data);
    void take_join_proof(std::span<const std::byte> bytes);
    wire::Role peer_role() const noexcept;
    std::string peer_label() const; // "the receiver 198.18.0.1:18515"
    void post_recv(std::uint64_t buffer);
    void post_proof();
    void drain(); // every completion there is
    void handle_batch(std::size_t n); // wcs_[0..n)
    void handle(const ibv_wc& wc);
    void take_proof(std::span<const std::byte> bytes);
    void take_ring(std::span<const std::byte> bytes);
    void wait_for_our_proof(); // bounded: so the peer can tell its user why too
    [[noreturn]] void lost(const CmEvent& ev);
    bool through() const noexcept;

    Datapath& path_;
    wire::Role role_;
    std::shared_ptr<const PresharedKey> key_;
    std::optional<Join> join_; // a joining connection's
    wire::HelloBytes hello_;
    wire::HelloBytes peer_hello_{}; // as sent: 48 bytes, or a joining dialler's 56
    bool have_peer_hello_ = false;
    std::uint32_t peer_slots_ = 0;
    std::string peer_;
    // Per message: a proof, or an advert with the window keys of up to the
    // sender's largest ring (a receiver's: a proof).
    std::size_t buffer_;
    RegisteredRegion region_; // receive buffers, then the send buffer
    std::size_t recvs_posted_ = 0, recvs_done_ = 0;
    bool proof_posted_ = false, proof_acked_ = false, peer_proved_ = false;
    std::optional<wire::RingAdvert> ring_;
    bool done_ = false;
    std::array<ibv_wc, 4> wcs_{};
};

} // namespace rdmastream
