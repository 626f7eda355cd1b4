// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/pending_peers.hpp"

#include "rdmastream/error.hpp"
#include "setup/refuse_on_error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace rdmastream {

namespace {
long long ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
} // namespace

PendingPeers::PendingPeers(Listener& listener, const OpeningPlan& plan, std::chrono::milliseconds handshake_timeout)
    : listener_(listener), plan_(plan), handshake_timeout_(handshake_timeout) {
    const PendingLimits l = listener_.pending_limits();
    pending_.reserve(l.total);
    fds_.reserve(2 * l.total + 2);
}

PendingPeers::~PendingPeers() = default; // each peer's connection goes: a half-open one sees a reject

std::size_t PendingPeers::from(const std::string& address) const {
    return static_cast<std::size_t>(
        std::count_if(pending_.begin(), pending_.end(), [&](const auto& p) { return p->who.address == address; }));
}

std::optional<std::size_t> PendingPeers::oldest_half_open(const std::string& address) const {
    std::optional<std::size_t> best;
    std::size_t best_count = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
        const Peer& p = *pending_[i];
        if (p.connected || (!address.empty() && p.who.address != address)) continue;
        // Any address: the one with most pending first, then the oldest.
        const std::size_t count = address.empty() ? from(p.who.address) : 0;
        if (!best || count > best_count || (count == best_count && p.since < pending_[*best]->since)) {
            best = i;
            best_count = count;
        }
    }
    return best;
}

void PendingPeers::drop(std::size_t i, const std::string& why) {
    listener_.log_refusal(pending_[i]->who.name, why);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i)); // all made for it goes
}

void PendingPeers::make_room(const std::string& address) {
    const PendingLimits l = listener_.pending_limits();
    if (const std::size_t n = from(address); n >= l.per_address) {
        const std::optional<std::size_t> v = oldest_half_open(address);
        if (!v) {
            throw PeerRefused(wire::RejectReason::kBusy,
                              fmt::format("busy: {} handshakes from your address are pending already (at most {} "
                                          "per address); try again",
                                          n, l.per_address));
        }
        drop(*v, fmt::format("dropped for a newer request from its address: {} of its connect requests were pending "
                             "(at most {} per address) and this one, the oldest, had not completed in {} ms",
                             n, l.per_address, ms(Clock::now() - pending_[*v]->since)));
    }
    if (pending_.size() >= l.total) {
        const std::optional<std::size_t> v = oldest_half_open("");
        if (!v) {
            throw PeerRefused(wire::RejectReason::kBusy,
                              fmt::format("busy: {} handshakes are pending already (at most {}); try again",
                                          pending_.size(), l.total));
        }
        drop(*v, fmt::format("dropped for a newer request: {} handshakes were pending (at most {}) and this one had "
                             "not completed its connect request in {} ms",
                             pending_.size(), l.total, ms(Clock::now() - pending_[*v]->since)));
    }
}

void PendingPeers::take_requests(std::size_t at_most, const Listener::Screen& screen) {
    for (std::size_t n = 0; n < at_most; ++n) {
        Listener::Requester who;
        std::optional<Handshake::Join> join;
        std::optional<RcConnection> conn =
            listener_.try_request(plan_.queues, [&](std::span<const std::byte> hello, const Listener::Requester& r) {
                if (screen) screen(hello, r);
                join = screen_hello(hello, r.name, plan_);
                make_room(r.address);
                who = r;
            });
        if (!conn) {
            return; // none left: each refused one is logged
        }
        Opening o = make_opening(std::move(*conn), plan_, join);
        RcConnection& c = o.path->connection();
        try {
            check_or_refuse(c, [&] { take_hello(o, plan_); }); // screened already: cannot fail
            c.accept_begin(o.handshake->hello());
        } catch (const std::exception& e) { // rdma_accept: the peer gave its request up (EINVAL)
            listener_.log_refusal(who.name, fmt::format("it gave its connect request up: {}", e.what()));
            continue;
        }
        const auto now = Clock::now();
        pending_.push_back(
            std::make_unique<Peer>(Peer{std::move(o), std::move(who), now, now + plan_.queues.establish_timeout, false}));
    }
}

bool PendingPeers::step(Peer& p, Clock::time_point now) {
    if (!p.connected) {
        if (!p.opening.path->connection().accept_done()) { // CmEventError: rejected, gave up, timed out
            if (now >= p.deadline) {
                throw TimeoutError(fmt::format("it did not complete its connect request within {} ms (half-open)",
                                               plan_.queues.establish_timeout.count()));
            }
            return false;
        }
        p.connected = true;
        p.deadline = now + handshake_timeout_;
    }
    p.opening.path->arm(); // before the step's poll: what lands after it wakes wait()
    if (p.opening.handshake->step()) {
        return true;
    }
    if (now >= p.deadline) {
        p.opening.handshake->time_out(handshake_timeout_);
    }
    return false;
}

std::optional<Opening> PendingPeers::advance() {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < pending_.size();) {
        Peer& p = *pending_[i];
        try {
            if (!step(p, now)) {
                ++i;
                continue;
            }
        } catch (const CmEventError& e) {
            drop(i, fmt::format("it did not complete the handshake: {}", e.what()));
            continue;
        } catch (const std::exception& e) {
            if (p.connected) p.opening.path->disconnect(); // too late to reject: the peer sees a disconnect
            drop(i, e.what());
            continue;
        }
        Opening through = std::move(p.opening);
        pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
        return through;
    }
    return std::nullopt;
}

Readiness PendingPeers::wait(Clock::time_point until, Waker* waker) {
    fds_.clear();
    fds_.push_back({listener_.fd(), POLLIN, 0});
    auto wake_at = until;
    for (const auto& p : pending_) {
        RcConnection& c = p->opening.path->connection();
        fds_.push_back({c.events().fd(), POLLIN, 0});
        if (p->connected) fds_.push_back({c.comp_channel()->fd, POLLIN, 0}); // armed by its last step
        wake_at = std::min(wake_at, p->deadline);
    }
    if (waker != nullptr) {
        if (waker->take() || !waker->sleep_begin()) {
            waker->take();
            return Readiness::kWoken;
        }
        fds_.push_back({waker->fd(), POLLIN, 0});
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - Clock::now());
    const int rc = ::poll(fds_.data(), fds_.size(), static_cast<int>(std::max<long long>(0, left.count())));
    const int err = errno;
    if (waker != nullptr) {
        waker->sleep_end((fds_.back().revents & POLLIN) != 0);
        if (waker->take()) return Readiness::kWoken;
    }
    if (rc < 0 && err != EINTR) {
        throw SystemError("poll(pending handshakes)", err);
    }
    return Clock::now() >= until ? Readiness::kTimedOut : Readiness::kReadable;
}

void PendingPeers::drop_all(const std::string& why) {
    while (!pending_.empty()) {
        Peer& p = *pending_.back();
        if (p.connected) p.opening.path->disconnect();
        drop(pending_.size() - 1, why);
    }
}

} // namespace rdmastream
