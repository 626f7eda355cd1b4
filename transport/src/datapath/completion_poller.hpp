// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame completion handling for one connection: batched CQ polling, and
// one wait that sleeps on the completion channel, the rdma_cm channel, the
// device's async events and the caller's Waker at once, so a disconnect, a
// dead QP or a slot freed downstream wakes a waiter as surely as a
// completion does. The wait returns what woke it; it never throws for time.
//
// A port that goes down is not by itself the end: an RC QP retransmits
// until its retry budget runs out (ack timeout x (retries + 1), about 1.9 s
// by default), so a link that comes back within it costs a stall, not the
// stream. A port down for longer than that ends the wait with an error
// naming the port and its link (rxe loops traffic back inside one host
// whatever the link does, so the QP alone would not notice), and a
// completion that fails after an outage names it too.
//
// Hot path: poll() is one ibv_poll_cq, no allocation. wait() returns at once
// when completions are queued; otherwise it re-arms the CQ (only if no
// notification is armed already: on rxe a re-arm is a syscall) and sleeps
// only when a final poll after re-arming finds nothing (the race-free
// pattern from ibv_get_cq_event(3)): per sleep one poll(2), plus one read(2)
// of the channel when the CQ's notification woke it. Device async events
// are looked at only when the device's fd is readable or another
// connection's thread left some for us (a load of an atomic flag).
#pragma once

#include "setup/cm_event_channel.hpp"
#include "rdmastream/policy.hpp"
#include "setup/rc_connection.hpp"
#include "rdmastream/waker.hpp"

#include <poll.h>

#include <array>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

// PollMode (policy.hpp) kEvent: sleep on the completion channel (low CPU, a
// wake-up per batch). kBusy: spin on the CQ (lowest latency, a core at
// 100 %), looking at the connection and device events every millisecond.

// What put a queue pair in error, asked after a flushed completion. A QP
// fails by itself only on a work request of its own that failed (its
// completion, not a flush, is in the CQ before the flushes: the NIC
// completes it, then fails the QP), on a device event, or, as the
// responder, on a request of the peer's that the NIC refused and answered
// with a NAK (a write through a key or into a range the peer does not
// hold, a read or atomic the QP does not allow): then this end has no
// completion of its own to say so (rxe raises no event either; a NIC may
// raise IBV_EVENT_QP_ACCESS_ERR or _REQ_ERR), only the flush. A peer that
// hangs up does not fail it (the QP stays in RTS until we stop it; seen on
// rxe: the disconnect event comes with the QP in RTS).
struct FlushCause {
    std::optional<ibv_wc> own; // a failed completion of this end's own (not a flush): it says why
    bool peer_request = false; // nothing of ours failed, no port outage, not stopped: the peer's request
};

// What ended a wait.
struct Waited {
    enum Kind { kCompletions, kCmEvent, kWoken, kTimeout };
    Kind kind = kTimeout;
    std::size_t completions = 0;  // kCompletions: how many were written to the caller's span
    std::optional<CmEvent> event; // kCmEvent
};

// The fds of one poll(2) over one or more sleepers (PathWait: every path's
// connection), each adding its own in a fixed order. No allocation.
struct SleepFds {
    static constexpr std::size_t kMax = 16;
    std::array<pollfd, kMax> fds{};
    std::size_t n = 0;
    void add(int fd) {
        if (n == kMax) throw std::logic_error("SleepFds: more than 16 fds to sleep on");
        fds[n++] = pollfd{fd, POLLIN, 0};
    }
    std::span<const pollfd> span() const noexcept { return {fds.data(), n}; }
};

class CompletionPoller {
public:
    // `waker` (may be null) interrupts wait(); it must outlive the poller.
    explicit CompletionPoller(RcConnection& conn, PollMode mode = PollMode::kEvent, Waker* waker = nullptr);
    void set_waker(Waker* waker) noexcept { waker_ = waker; } // VerbsDatapath::set_waker
    ~CompletionPoller();
    CompletionPoller(const CompletionPoller&) = delete;
    CompletionPoller& operator=(const CompletionPoller&) = delete;

    // Up to out.size() completions; 0 when none are ready. Never blocks.
    std::size_t poll(std::span<ibv_wc> out);

    // Waits until completions are ready (written to out), an rdma_cm event
    // arrives, the waker is woken (its wake is taken), or `deadline` passes.
    // Completions already queued come first.
    Waited wait(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline);
    Waited wait(std::span<ibv_wc> out, std::chrono::milliseconds timeout) {
        return wait(out, std::chrono::steady_clock::now() + timeout);
    }

    // For a caller that sleeps on many connections at once (a listener's
    // pending handshakes) instead of in wait(): takes a notification that
    // fired, arms the CQ's next one, and returns the completion channel's
    // fd, readable once a completion arrives after this call. Poll the CQ
    // after it (what came before the arm wakes nothing).
    int arm();

    // wait()'s sleep cut in two around a poll(2) that the caller makes over
    // other connections' fds too (PathWait), kEvent mode. begin_sleep: what
    // wait() would return at once (completions written to out, a held
    // connection event), or nullopt with the CQ armed, this connection's
    // fds added to `fds` and `wake_at` lowered to when it must look again
    // (a port outage outlasting the retries); `now`: the caller's clock
    // read for this sleep (one per sleep, whatever the connections: a
    // system call in the TCG guests). end_sleep: after the poll(2)
    // (or instead of it: no fds), the entries begin_sleep added with their
    // revents; what came, or nullopt. Every begin_sleep that returned
    // nullopt takes one end_sleep.
    std::optional<Waited> begin_sleep(std::span<ibv_wc> out, SleepFds& fds, std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::time_point& wake_at);
    std::optional<Waited> end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds);

    // A failed completion: throws ConnectionError, naming the device event
    // behind it when there is one (a QP's fatal event, or a port that went down: it
    // explains a retry counter that ran out).
    [[noreturn]] void fail(const ibv_wc& wc, const char* side);

    // Asked after a flushed completion (Datapath::FlushCause): takes what
    // is left in the CQ (the caller is failing anyway) and the device
    // events. Error paths only: a syscall or two.
    FlushCause flush_cause();

private:
    // Takes this connection's device events (device_events.hpp: reading the
    // device's fd routes each to the connection it concerns, so none of
    // ours is lost to another connection's poller); throws ConnectionError
    // on one that means this connection (or the whole device) is gone, and
    // notes our port going down and up.
    void take_device_events();
    // "; port 1 of rxe0 (link eth0) went down 1.9 s before" (or "was down
    // for 1.0 s", for an outage over within the last minute), or "".
    std::string port_outage() const;
    // While our port is down: when its outage outlasts the retry budget.
    std::optional<std::chrono::steady_clock::time_point> port_deadline() const;
    // Throws ConnectionError once the port has been down past port_deadline().
    void check_port(std::chrono::steady_clock::time_point now) const;
    Waited spin(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline);
    Waited sleep(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline);
    // A connection event, unless completions came in just before it: then
    // those, and the event at the next wait. A peer that hangs up right
    // after its last message (end of stream) must not hide that message.
    Waited event_after_completions(std::span<ibv_wc> out);

    RcConnection& conn_;
    PollMode mode_;
    Waker* waker_;
    bool armed_ = false;          // a CQ notification is requested and has not fired yet
    std::optional<CmEvent> held_event_; // read, kept until the completions before it were taken
    unsigned unacked_events_ = 0; // acked in batches; all before the CQ dies
    std::vector<DeviceEvent> device_events_; // take_device_events()'s, kept to reuse its storage
    // Our port's last outage: when it went down (down_ while it still is),
    // and how long it lasted once it came back.
    bool port_down_ = false;
    std::optional<std::chrono::steady_clock::time_point> port_down_at_;
    std::chrono::steady_clock::duration port_down_for_{};
    std::chrono::steady_clock::duration retry_budget_; // the QP's, from the connection's options
};

// "remote access error (wr_id 7, opcode RDMA_WRITE)" for a failed completion.
std::string describe_failed_wc(const ibv_wc& wc);

} // namespace rdmastream
