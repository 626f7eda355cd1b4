// SPDX-License-Identifier: LGPL-2.1-or-later
// Peers on their way in through a listener: many handshakes at once, each
// with its own deadline, bounded in number and per peer address
// (Listener::pending_limits()), so that connect requests that never
// complete cannot lock a genuine peer out. sshd's MaxStartups and the
// kernel's SYN backlog are the models: many pending, few per source, the
// oldest half-open one dropped first.
//
// A pending peer goes through two steps: its connect request accepted (we
// answered; it must complete the connection within the connection's
// establish timeout: until then it is "half-open" and costs its sender nothing but
// a request), then its handshake (key proofs, the ring advert) within
// `handshake_timeout`. One that fails a step, or overruns its deadline, is
// logged by the listener in one line naming it, and goes with all made
// for it. Never blocks but in wait().
//
// Thread rule: one thread drives a PendingPeers and its listener.
#pragma once

#include "stream/opening.hpp"

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream {

class PendingPeers {
public:
    using Clock = std::chrono::steady_clock;
    // Connect requests one take_requests() of its callers reads at most, so
    // that a flood is read over several looks and the peers pending
    // meanwhile still move on.
    static constexpr std::size_t kRequestsPerLook = 16;

    // `plan`: how this end opens a connection; it must outlive this.
    PendingPeers(Listener& listener, const OpeningPlan& plan, std::chrono::milliseconds handshake_timeout);
    ~PendingPeers();
    PendingPeers(const PendingPeers&) = delete;
    PendingPeers& operator=(const PendingPeers&) = delete;

    // Takes the connect requests the listener holds now, at most `at_most`:
    // each screened (allow list, `screen` if any, the hello), then given
    // room within the bounds (a half-open peer may be dropped for it, or it
    // is refused "busy"), accepted, and pending. ListenerError when the
    // listener itself fails.
    void take_requests(std::size_t at_most, const Listener::Screen& screen = {});
    // Moves every pending peer on; those that failed or overran their
    // deadline are logged and dropped. Returns one peer through its
    // handshake, if any (call again for the next).
    std::optional<Opening> advance();
    // Sleeps until the listener holds a request, a pending peer has news or
    // reaches its deadline, `until` passes (kTimedOut) or `waker` (may be
    // null) is woken (kWoken, the wake taken).
    Readiness wait(Clock::time_point until, Waker* waker);
    // Drops every pending peer, each logged with `why` ("busy: ...").
    void drop_all(const std::string& why);

    std::size_t size() const noexcept { return pending_.size(); }

private:
    struct Peer {
        Opening opening;
        Listener::Requester who;
        Clock::time_point since;
        Clock::time_point deadline;
        bool connected = false; // ESTABLISHED: the handshake runs
    };
    // Makes room for one more request from `address`, or throws PeerRefused.
    void make_room(const std::string& address);
    std::size_t from(const std::string& address) const;
    // The oldest half-open peer from `address` ("": from the address with
    // the most pending), if any.
    std::optional<std::size_t> oldest_half_open(const std::string& address) const;
    void drop(std::size_t i, const std::string& why);
    // One peer's step: true once through its handshake; throws what ended it.
    bool step(Peer& p, Clock::time_point now);

    Listener& listener_;
    const OpeningPlan& plan_;
    std::chrono::milliseconds handshake_timeout_;
    std::vector<std::unique_ptr<Peer>> pending_; // a Peer never moves: its Opening goes whole
    std::vector<pollfd> fds_; // wait()'s, kept to reuse its storage
};

} // namespace rdmastream
