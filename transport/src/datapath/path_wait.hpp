// SPDX-License-Identifier: LGPL-2.1-or-later
// One wait over several paths' connections (docs/design/two-paths.md,
// Decision 6): a stream end with two paths sleeps in one poll(2) over both
// paths' fds (completion channel, rdma_cm channel, device events) and its
// Waker, until the earlier of its deadline and either path's own (a port
// outage outlasting the retries), and says which paths have something:
// waiting on one path would miss the other's credit or hang-up. Busy mode
// spins over both instead. One path's wait is Datapath::wait, as before.
//
// Per wait in event mode: each path's CQ armed (a syscall only when not
// armed already), one poll(2), and one read(2) per channel that fired; no
// allocation.
#pragma once

#include "datapath/datapath.hpp"

#include <array>
#include <chrono>
#include <exception>
#include <optional>
#include <span>

namespace rdmastream {

class PathWait {
public:
    static constexpr std::size_t kMaxPaths = 2;

    struct Woke {
        // kMail: the mailbox waker was woken (a path that came back waits
        // to be taken), told apart from the caller's wake.
        enum Kind { kPaths, kWoken, kTimeout, kMail } kind = kTimeout;
        // kPaths: what each path had (completions written to its span of
        // `outs`, or a connection event); empty for a path with nothing.
        std::array<std::optional<Waited>, kMaxPaths> paths;
        // kPaths: what a path threw while it was looked at (its port down
        // past the retries, a device event, a failed poll): that path's
        // failure, not the wait's, so the caller can part with that path alone.
        std::array<std::exception_ptr, kMaxPaths> failed;
    };

    // `waker` (may be null): the stream end's; `mail` (may be null): the
    // stream end's own, rung by the threads that bring paths back. Both
    // must outlive this.
    PathWait(PollMode mode, Waker* waker, Waker* mail = nullptr) noexcept : mode_(mode), waker_(waker), mail_(mail) {}

    // Waits until a path has completions, a connection event or a failure,
    // the waker is woken (its wake taken), or `deadline`. paths[i]'s completions go
    // to outs[i]. Completions already queued come first, without a sleep.
    Woke wait(std::span<Datapath* const> paths, std::span<const std::span<ibv_wc>> outs,
              std::chrono::steady_clock::time_point deadline);

private:
    Woke spin(std::span<Datapath* const> paths, std::span<const std::span<ibv_wc>> outs,
              std::chrono::steady_clock::time_point deadline);

    PollMode mode_;
    Waker* waker_;
    Waker* mail_;
};

} // namespace rdmastream
