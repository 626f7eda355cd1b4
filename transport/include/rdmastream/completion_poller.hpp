// Per-frame completion handling for one connection: batched CQ polling, and
// a wait that sleeps on the completion channel, the rdma_cm channel and the
// device's async events at once, so a disconnect or a dead port wakes a
// waiter as surely as a completion does.
//
// Hot path: poll() is one ibv_poll_cq, no allocation. wait() re-arms the CQ
// and only sleeps when a final poll after re-arming finds nothing (the
// race-free pattern from ibv_get_cq_event(3)).
#pragma once

#include "rdmastream/cm_event_channel.hpp"
#include "rdmastream/rc_connection.hpp"

#include <chrono>
#include <optional>
#include <span>

namespace rdmastream {

// Event: sleep on the completion channel (low CPU, a wake-up per batch).
// Busy: spin on the CQ (lowest latency, a core at 100 %), looking at the
// connection and device events every millisecond.
enum class PollMode { kEvent, kBusy };

class CompletionPoller {
public:
    explicit CompletionPoller(RcConnection& conn, PollMode mode = PollMode::kEvent);
    ~CompletionPoller();
    CompletionPoller(const CompletionPoller&) = delete;
    CompletionPoller& operator=(const CompletionPoller&) = delete;

    // Up to out.size() completions; 0 when none are ready. Never blocks.
    std::size_t poll(std::span<ibv_wc> out);

    // Waits until completions are ready (returns how many, written to out),
    // an rdma_cm event arrives (returned in `event`, 0 completions), or the
    // timeout passes (0 completions, no event).
    std::size_t wait(std::span<ibv_wc> out, std::chrono::milliseconds timeout, std::optional<CmEvent>& event);

    // A failed completion: throws, naming the device event behind it when
    // there is one (a port that went down explains a local QP error).
    [[noreturn]] void fail(const ibv_wc& wc, const char* side);

private:
    // Acks every pending async event; throws on one that means this
    // connection (or the whole device) is gone.
    void drain_async_events();
    std::size_t spin(std::span<ibv_wc> out, std::chrono::milliseconds timeout, std::optional<CmEvent>& event);

    RcConnection& conn_;
    PollMode mode_;
    unsigned unacked_events_ = 0; // acked in batches; all before the CQ dies
};

// "remote access error (wr_id 7, opcode RDMA_WRITE)" for a failed completion.
std::string describe_failed_wc(const ibv_wc& wc);

} // namespace rdmastream
