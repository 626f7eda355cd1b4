// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame code: see path_wait.hpp.
#include "datapath/path_wait.hpp"

#include "rdmastream/error.hpp"

#include <poll.h>

#include <cerrno>
#include <stdexcept>
#include <utility>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

PathWait::Woke PathWait::wait(std::span<Datapath* const> paths, std::span<const std::span<ibv_wc>> outs,
                              Clock::time_point deadline) {
    if (paths.empty() || paths.size() > kMaxPaths || outs.size() != paths.size()) {
        throw std::logic_error("PathWait: one or two paths, a completion span each");
    }
    if (mode_ == PollMode::kBusy) return spin(paths, outs, deadline);
    for (;;) {
        if (waker_ != nullptr && waker_->take()) return {Woke::kWoken, {}, {}};
        if (mail_ != nullptr && mail_->take()) return {Woke::kMail, {}, {}};
        Woke woke{Woke::kPaths, {}, {}};
        bool any = false;
        SleepFds fds;
        std::array<std::size_t, kMaxPaths + 1> first_fd{}; // path i's fds: [first_fd[i], first_fd[i + 1])
        std::array<bool, kMaxPaths> begun{};
        auto wake_at = deadline;
        const auto now = Clock::now(); // one clock read for every path's look
        for (std::size_t p = 0; p < paths.size(); ++p) {
            first_fd[p] = fds.n;
            try {
                if ((woke.paths[p] = paths[p]->begin_sleep(outs[p], fds, now, wake_at))) {
                    any = true;
                } else {
                    begun[p] = true;
                }
            } catch (...) {
                woke.failed[p] = std::current_exception(); // that path's; the others' sleeps end below
                fds.n = first_fd[p];
                any = true;
            }
        }
        first_fd[paths.size()] = fds.n;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now);
        bool sleep = !any && left.count() > 0 && (waker_ == nullptr || waker_->sleep_begin());
        if (sleep && mail_ != nullptr && !mail_->sleep_begin()) {
            if (waker_ != nullptr) waker_->sleep_end(false);
            sleep = false; // mail came meanwhile: taken at the next look
        }
        int poll_errno = 0;
        if (sleep) {
            const std::size_t waker_at = fds.n;
            if (waker_ != nullptr) fds.add(waker_->fd());
            const std::size_t mail_at = fds.n;
            if (mail_ != nullptr) fds.add(mail_->fd());
            if (::poll(fds.fds.data(), fds.n, static_cast<int>(left.count())) < 0) poll_errno = errno;
            if (waker_ != nullptr) waker_->sleep_end((fds.fds[waker_at].revents & POLLIN) != 0);
            if (mail_ != nullptr) mail_->sleep_end((fds.fds[mail_at].revents & POLLIN) != 0);
        }
        for (std::size_t q = 0; q < paths.size(); ++q) {
            if (!begun[q]) continue;
            const auto mine = fds.span().subspan(first_fd[q], first_fd[q + 1] - first_fd[q]);
            try {
                if ((woke.paths[q] = paths[q]->end_sleep(outs[q], mine))) any = true;
            } catch (...) {
                woke.failed[q] = std::current_exception();
                any = true;
            }
        }
        if (poll_errno != 0 && poll_errno != EINTR) throw SystemError("poll(paths)", poll_errno);
        if (any) return woke;
        if (left.count() <= 0 && wake_at == deadline) return {Woke::kTimeout, {}, {}};
        // Else a path's own deadline (its next look throws), a wake, or a signal.
    }
}

PathWait::Woke PathWait::spin(std::span<Datapath* const> paths, std::span<const std::span<ibv_wc>> outs,
                              Clock::time_point deadline) {
    auto next_look = Clock::now();
    for (;;) {
        if (waker_ != nullptr && waker_->pending() && waker_->take()) return {Woke::kWoken, {}, {}}; // a load: no syscall
        if (mail_ != nullptr && mail_->pending() && mail_->take()) return {Woke::kMail, {}, {}};
        Woke woke{Woke::kPaths, {}, {}};
        bool any = false;
        for (std::size_t p = 0; p < paths.size(); ++p) {
            try {
                if (const std::size_t n = paths[p]->poll(outs[p]); n > 0) {
                    woke.paths[p] = Waited{Waited::kCompletions, n, {}};
                    any = true;
                }
            } catch (...) {
                woke.failed[p] = std::current_exception();
                any = true;
            }
        }
        if (any) return woke;
        const auto now = Clock::now(); // vDSO: no syscall
        if (now < next_look) continue;
        // Once a millisecond, each path's connection and device events (a
        // wait with a deadline of now: one look, as its own spin makes).
        for (std::size_t p = 0; p < paths.size(); ++p) {
            try {
                Waited w = paths[p]->wait(outs[p], now);
                if (w.kind == Waited::kCompletions || w.kind == Waited::kCmEvent) {
                    woke.paths[p] = std::move(w);
                    any = true;
                }
            } catch (...) {
                woke.failed[p] = std::current_exception();
                any = true;
            }
        }
        if (any) return woke;
        if (now >= deadline) return {Woke::kTimeout, {}, {}};
        next_look = now + std::chrono::milliseconds(1);
    }
}

} // namespace rdmastream
