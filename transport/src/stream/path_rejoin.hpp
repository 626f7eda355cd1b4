// SPDX-License-Identifier: LGPL-2.1-or-later
// Brings a two-path stream end's lost paths back (docs/design/two-paths.md,
// Decision 5), on threads of its own, so that the stream never waits for a
// dial or a handshake:
//   dialling end: lost(p) starts a thread that dials path p's peer with a
//     join (the stream's session token in the hello, proofs under its
//     secret), again and again with backoff (0.2 s doubling to 5 s, asleep
//     in between) until a connection is through its handshake. A refusal
//     that cannot change (the peer has no stream with this token: it ended;
//     the proof does not match) ends it, logged once.
//   listening end: each door's listener is served by a thread from the
//     start, for the stream's life: a request that joins this stream goes
//     through its handshake (PendingPeers: the door's allow list, pending
//     limits and deadlines, as for any peer); any other is refused "busy",
//     as BusyRefuser refuses one for a one-path stream.
// A connection through its handshake waits in a mailbox (one per path; a
// newer one replaces one not yet taken), and mail() is rung; the stream
// end's thread take()s it and makes its FrameReceiver or FrameSender there.
//
// Thread rule: lost() and take() from the stream end's thread.
#pragma once

#include "rdmastream/endpoint.hpp"
#include "rdmastream/waker.hpp"
#include "setup/listener.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/opening.hpp"
#include "wire/peer_auth.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rdmastream {

class PathRejoin {
public:
    static constexpr std::size_t kPaths = 2;
    using LogFn = std::function<void(const std::string&)>;

    // Where each path is met again: its peer's address (dialling) or its
    // door's listener (listening; the stream end keeps it, this thread
    // alone uses it).
    struct Door {
        std::optional<Endpoint> dial;
        Listener* listen = nullptr;
    };
    struct Joined {
        std::size_t path = 0;
        Opening opening; // through its handshake; its datapath's waker is ours: set the stream's
        // What `prepare` made of the opening on the thread (a receiver's
        // FrameReceiver: its ring registered there, not on the stream's
        // thread, where pinning a ring stalls the frames of the other path).
        std::unique_ptr<FrameReceiver> receiver;
    };
    // Runs on the thread that brought the connection, before it is handed
    // over (may throw: that connection is then dropped, logged, and the
    // path dialled again or awaited).
    using Prepare = std::function<void(Joined&)>;

    // `plans`: how this end opens each path's connection (their wakers are
    // replaced by this object's own); `secret`: the stream's, from its
    // founding connection; `stream_peer`: that connection's peer, for
    // messages.
    PathRejoin(std::array<Door, kPaths> doors, std::array<OpeningPlan, kPaths> plans,
               std::shared_ptr<const SessionSecret> secret, std::string stream_peer,
               std::chrono::milliseconds handshake_timeout, LogFn log, Prepare prepare = {});
    ~PathRejoin(); // stops and joins every thread; what waits in the mailbox goes
    PathRejoin(const PathRejoin&) = delete;
    PathRejoin& operator=(const PathRejoin&) = delete;

    // Rung when a path's connection waits in the mailbox.
    Waker& mail() noexcept { return mail_; }
    // Path `path` was lost: a dialling end starts dialling it again (a
    // listening end's door takes its join whenever it comes).
    void lost(std::size_t path);
    // A path's RDMA device went and its stream end let go of all it held
    // there: the dialling threads let librdmacm close the device's context
    // (close_removed_cm_devices) at each try until a dial gets through, so
    // that the device can go and come back. Any thread.
    void device_gone() noexcept { device_gone_.store(true); }
    // A path back, if one waits.
    std::optional<Joined> take();

private:
    void dial_loop(std::size_t path);
    void listen_loop(std::size_t path);
    // A door whose device went: its listener lets go of it, then binds
    // again with backoff until the device is back; false once stopped.
    bool listen_again(std::size_t path, Listener& listener);
    // Prepares the connection, then leaves it in the mailbox; false when
    // preparing it failed (logged).
    bool put(std::size_t path, Opening opening);
    // Sleeps `d` or until stopped; false when stopped.
    bool pause(std::size_t path, std::chrono::milliseconds d);

    std::array<Door, kPaths> doors_;
    std::array<OpeningPlan, kPaths> plans_;
    std::shared_ptr<const SessionSecret> secret_;
    std::string stream_peer_;
    std::chrono::milliseconds handshake_timeout_;
    LogFn log_;
    Waker mail_;
    std::array<Waker, kPaths> stop_; // each thread's: interrupts its dial or its wait
    std::atomic<bool> stopping_{false};
    std::atomic<bool> device_gone_{false}; // device_gone()
    const std::chrono::steady_clock::time_point opened_; // the stream's opening (kFirstJoinGrace)
    std::array<std::atomic<bool>, kPaths> joined_once_{}; // a dial of it got through once
    std::mutex mutex_; // box_
    Prepare prepare_;
    std::array<std::optional<Joined>, kPaths> box_;
    std::array<std::thread, kPaths> threads_; // last: they read everything above
};

} // namespace rdmastream
