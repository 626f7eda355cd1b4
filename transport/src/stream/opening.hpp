// SPDX-License-Identifier: LGPL-2.1-or-later
// How either stream end opens a connection, the one way both do it: dial
// (retrying until the peer listens, a refusal explained) or accept the first
// peer through its handshake from a listener (many at once, bounded:
// stream/pending_peers.hpp; a bad hello refused before anything is made for
// it, a failed handshake logged); either way the
// peer's hello is taken and checked and the handshake (wire/handshake.hpp:
// key proofs, the ring advert's turn) runs before the caller makes its
// FrameSender or FrameReceiver over the result.
#pragma once

#include "datapath/datapath.hpp"
#include "rdmastream/key.hpp"
#include "rdmastream/policy.hpp"
#include "rdmastream/waker.hpp"
#include "setup/listener.hpp"
#include "setup/rc_connection.hpp"
#include "wire/handshake.hpp"
#include "wire/wire.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

// A connection on its way to becoming a stream end.
struct Opening {
    std::unique_ptr<VerbsDatapath> path;
    std::unique_ptr<Handshake> handshake; // after path: goes first

    Opening() = default;
    Opening(Opening&&) noexcept = default;
    // Member-wise assignment would replace the connection (and its PD)
    // while the old handshake's memory is still registered on it.
    Opening& operator=(Opening&&) = delete;
};

// What differs between the two ends.
struct OpeningPlan {
    wire::Role role = wire::Role::kSender; // ours
    const char* peer_role = "receiver";    // for messages: "receiver" or "sender"
    std::uint32_t slots = 0;               // our hello's slots
    std::shared_ptr<const PresharedKey> key;
    PollMode poll_mode = PollMode::kEvent;
    Waker* waker = nullptr; // the caller's options own it; interrupts dial()
    ConnectionOptions queues;
    // The end's own check of the peer's slots (from its hello): throws
    // UserError when they do not go with ours.
    std::function<void(std::uint32_t peer_slots)> check_slots;
    // Two paths (docs/design/two-paths.md): a dialler's connection that
    // joins a running stream (its hello asks to, with the stream's token);
    // or, listening, the stream every request must join (screened with
    // Handshake::screen_join: a request with another token, or none, is
    // refused). Neither: the connection founds a stream.
    std::optional<Handshake::Join> join;
    std::shared_ptr<const SessionSecret> joins;
    // Listening, besides founding connections: a request that asks to join
    // is screened against these streams (a fan-out's receivers'), and its
    // connection joins the one whose token it carries.
    const std::vector<std::shared_ptr<const SessionSecret>>* joins_any = nullptr;
};

// The datapath over `conn`, the handshake's receives posted; `join`: the
// connection joins a stream (default: plan.join's).
Opening make_opening(RcConnection conn, const OpeningPlan& plan);
Opening make_opening(RcConnection conn, const OpeningPlan& plan, const std::optional<Handshake::Join>& join);

// The peer's hello, from its connect request or accept, taken and checked.
void take_hello(Opening& o, const OpeningPlan& plan);

// A listener's screen: a peer's hello checked before anything is made for
// its connect request. With plan.joins, the join its connection makes.
std::optional<Handshake::Join> screen_hello(std::span<const std::byte> private_data, const std::string& peer,
                                            const OpeningPlan& plan);

// Dials `peer` until it answers or `patience` runs out (a refusal quoting
// the peer's reason is a UserError), then takes its hello and runs the
// handshake. nullopt when plan.waker was woken between two tries.
std::optional<Opening> dial(const Endpoint& peer, std::chrono::milliseconds patience, const OpeningPlan& plan);

// The first peer of `listener` through its handshake (allowed
// `handshake_timeout`), many handled at once within the listener's pending
// limits (stream/pending_peers.hpp); the others pending then are refused
// "busy". nullopt once plan.waker is woken; TimeoutError at `deadline`
// ("no receiver connected to `where` within ..."). Peers that fail are
// logged by the listener.
std::optional<Opening> accept_next_peer(Listener& listener, std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds handshake_timeout, const OpeningPlan& plan,
                                        const std::string& where);

} // namespace rdmastream
