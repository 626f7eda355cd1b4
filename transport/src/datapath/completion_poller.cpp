// SPDX-License-Identifier: LGPL-2.1-or-later
#include "datapath/completion_poller.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "setup/port_link.hpp"

#include <fcntl.h>
#include <poll.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace rdmastream {

namespace {
constexpr unsigned kAckBatch = 64;

} // namespace

std::string describe_failed_wc(const ibv_wc& wc) {
    // A failed completion carries only wr_id, status, qp_num and vendor_err
    // (ibv_poll_cq(3)): the opcode is undefined, so the caller's wr_id
    // encoding must say what the work request was.
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
        return fmt::format("{} (wr_id {}): the connection had already failed", ibv_wc_status_str(wc.status),
                           wc.wr_id);
    }
    return fmt::format("{} (wr_id {}, vendor error {:#x})", ibv_wc_status_str(wc.status), wc.wr_id, wc.vendor_err);
}

namespace {
void set_nonblocking(int fd, const char* what) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        throw SystemError(fmt::format("fcntl(O_NONBLOCK) on the {}", what), errno);
    }
}
} // namespace

CompletionPoller::CompletionPoller(RcConnection& conn, PollMode mode, Waker* waker)
    : conn_(conn), mode_(mode), waker_(waker),
      // 4.096 us x 2^ack_timeout per try (ibv_modify_qp(3)), retry_count
      // retries after the first.
      retry_budget_(std::chrono::nanoseconds(4096ll << conn.options().ack_timeout) *
                    (conn.options().retry_count + 1)) {
    set_nonblocking(conn_.comp_channel()->fd, "completion channel");
    device_events_.reserve(16); // collected into without allocating, as a rule
}

void CompletionPoller::fail(const ibv_wc& wc, const char* side) {
    // The async event that explains the failure is usually queued already;
    // give it a moment if not, since "local QP operation error" alone tells
    // a user nothing.
    DeviceEventSubscription& events = conn_.device_events();
    for (int i = 0; i < 20; ++i) {
        take_device_events(); // throws with the device's own event if there is one
        if (!events.waker().sleep_begin()) continue; // routed here meanwhile by another thread
        pollfd fds[2] = {{events.device_fd(), POLLIN, 0}, {events.waker().fd(), POLLIN, 0}};
        const int rc = ::poll(fds, 2, 5);
        events.waker().sleep_end((fds[1].revents & POLLIN) != 0);
        if (rc <= 0) break;
    }
    throw ConnectionError(
        fmt::format("{}: work completion failed: {}{}", side, describe_failed_wc(wc), port_outage()));
}

FlushCause CompletionPoller::flush_cause() {
    if (conn_.stopped()) {
        return {}; // our own stop flushed it
    }
    take_device_events(); // throws with the device's own event if there is one
    if (port_down_at_) {
        return {}; // a port outage explains more than we know (fail() names it)
    }
    std::array<ibv_wc, 16> wcs{};
    while (std::size_t n = poll(wcs)) {
        for (std::size_t i = 0; i < n; ++i) {
            if (wcs[i].status != IBV_WC_SUCCESS && wcs[i].status != IBV_WC_WR_FLUSH_ERR) {
                return {wcs[i], false};
            }
        }
    }
    return {std::nullopt, true};
}

Waited CompletionPoller::spin(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) {
    using Clock = std::chrono::steady_clock;
    auto next_look = Clock::now();
    for (;;) {
        if (std::size_t n = poll(out); n > 0) {
            return {Waited::kCompletions, n, {}};
        }
        if (waker_ != nullptr && waker_->pending() && waker_->take()) { // a load while idle: no syscall
            return {Waited::kWoken, 0, {}};
        }
        const auto now = Clock::now(); // vDSO: no syscall
        if (now >= next_look) {        // the event fds cost a syscall: one poll(2) of both, once a millisecond
            check_port(now);
            // Our device events: on the device's fd, or read there by another
            // connection's thread and waiting for us (pending: a load).
            if (conn_.device_events().pending()) {
                take_device_events();
            }
            pollfd fds[2] = {{conn_.events().fd(), POLLIN, 0}, {conn_.device_events().device_fd(), POLLIN, 0}};
            if (::poll(fds, 2, 0) > 0) {
                if (fds[1].revents & POLLIN) {
                    take_device_events();
                }
                if (fds[0].revents & POLLIN) {
                    if (Waited w = event_after_completions(out); w.kind != Waited::kTimeout) {
                        return w;
                    }
                }
            }
            if (now >= deadline) {
                return {};
            }
            next_look = now + std::chrono::milliseconds(1);
        }
    }
}

void CompletionPoller::take_device_events() {
    DeviceEventSubscription& events = conn_.device_events();
    events.collect(device_events_); // QP and CQ events only ours; port and device ones everyone's
    for (const DeviceEvent& ev : device_events_) {
        if (ends_connection(ev.type)) {
            throw ConnectionError(fmt::format("RDMA device {} reported {}{}", events.device_name(),
                                              ibv_event_type_str(ev.type),
                                              ev.type == IBV_EVENT_DEVICE_FATAL ? ": the device is gone" : ""));
        }
        const bool our_port = scope_of(ev.type) == EventScope::kPort && ev.port == conn_.port();
        if (our_port && ev.type == IBV_EVENT_PORT_ERR && !port_down_) {
            port_down_ = true;
            port_down_at_ = ev.read_at;
        } else if (our_port && ev.type == IBV_EVENT_PORT_ACTIVE && port_down_) {
            port_down_ = false;
            port_down_for_ = ev.read_at - *port_down_at_;
        }
        // Anything else (communication established, a LID or GID change,
        // another port) changes nothing for an established RC connection.
    }
}

std::optional<std::chrono::steady_clock::time_point> CompletionPoller::port_deadline() const {
    if (!port_down_) {
        return std::nullopt;
    }
    return *port_down_at_ + retry_budget_;
}

void CompletionPoller::check_port(std::chrono::steady_clock::time_point now) const {
    if (port_down_ && now >= *port_deadline()) {
        using Seconds = std::chrono::duration<double>;
        throw ConnectionError(fmt::format(
            "{} has been down for {:.1f} s, longer than the connection's retries last: bring the link up "
            "(ip link set IFACE up; `rdma link show` must say ACTIVE) and restart the stream",
            describe_port(conn_.device(), conn_.port()), Seconds(now - *port_down_at_).count()));
    }
}

std::string CompletionPoller::port_outage() const {
    if (!port_down_at_) {
        return {};
    }
    using Seconds = std::chrono::duration<double>;
    const std::string port = describe_port(conn_.device(), conn_.port());
    if (port_down_) {
        return fmt::format("; {} went down {:.1f} s before and is still down", port,
                           Seconds(std::chrono::steady_clock::now() - *port_down_at_).count());
    }
    // An outage long over explains nothing: only one that ended within the
    // last minute is named.
    if (std::chrono::steady_clock::now() - (*port_down_at_ + port_down_for_) > std::chrono::minutes(1)) {
        return {};
    }
    return fmt::format("; {} was down for {:.1f} s", port, Seconds(port_down_for_).count());
}

CompletionPoller::~CompletionPoller() {
    if (unacked_events_ > 0) {
        ibv_ack_cq_events(conn_.cq(), unacked_events_);
    }
}

std::size_t CompletionPoller::poll(std::span<ibv_wc> out) {
    const int n = ibv_poll_cq(conn_.cq(), static_cast<int>(out.size()), out.data());
    if (n < 0) {
        // A negative count, not an errno (ibv_poll_cq(3)); errno is not set.
        throw SystemError("ibv_poll_cq", 0, fmt::format("returned {}", n));
    }
    return static_cast<std::size_t>(n);
}

Waited CompletionPoller::wait(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) {
    if (std::size_t n = poll(out); n > 0) {
        return {Waited::kCompletions, n, {}};
    }
    if (held_event_) {
        return {Waited::kCmEvent, 0, std::exchange(held_event_, std::nullopt)};
    }
    return mode_ == PollMode::kBusy ? spin(out, deadline) : sleep(out, deadline);
}

int CompletionPoller::arm() {
    if (armed_) { // it may have fired: read it, or the fd stays readable
        ibv_cq* cq = nullptr;
        void* ctx = nullptr;
        if (ibv_get_cq_event(conn_.comp_channel(), &cq, &ctx) == 0) {
            armed_ = false;
            if (++unacked_events_ >= kAckBatch) {
                ibv_ack_cq_events(conn_.cq(), unacked_events_);
                unacked_events_ = 0;
            }
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            throw SystemError("ibv_get_cq_event", errno);
        }
    }
    if (!armed_) {
        check_rc(ibv_req_notify_cq(conn_.cq(), 0), "ibv_req_notify_cq");
        armed_ = true;
    }
    return conn_.comp_channel()->fd;
}

Waited CompletionPoller::sleep(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        if (waker_ != nullptr && waker_->take()) {
            return {Waited::kWoken, 0, {}};
        }
        SleepFds fds;
        auto wake_at = deadline;
        // One clock read per sleep (a system call in the guests: hpet).
        const auto now = std::chrono::steady_clock::now();
        if (std::optional<Waited> w = begin_sleep(out, fds, now, wake_at)) {
            return std::move(*w);
        }
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake_at - now);
        if (left.count() <= 0 || (waker_ != nullptr && !waker_->sleep_begin())) {
            // Not sleeping after all (no time left, or woken meanwhile: taken at the top).
            if (std::optional<Waited> w = end_sleep(out, fds.span())) return std::move(*w);
            if (left.count() <= 0 && wake_at == deadline) return {};
            continue; // the port's deadline (check_port throws), or the wake
        }
        if (waker_ != nullptr) fds.add(waker_->fd());
        const int rc = ::poll(fds.fds.data(), fds.n, static_cast<int>(left.count()));
        const int poll_errno = errno;
        if (waker_ != nullptr) {
            waker_->sleep_end((fds.fds[fds.n - 1].revents & POLLIN) != 0);
        }
        if (rc < 0 && poll_errno != EINTR) {
            end_sleep(out, {}); // ends the device events' sleep; throws only what it would anyway
            throw SystemError("poll(completion channel)", poll_errno);
        }
        if (std::optional<Waited> w = end_sleep(out, fds.span())) return std::move(*w);
    }
}

std::optional<Waited> CompletionPoller::begin_sleep(std::span<ibv_wc> out, SleepFds& fds,
                                                    std::chrono::steady_clock::time_point now,
                                                    std::chrono::steady_clock::time_point& wake_at) {
    if (!armed_) {
        check_rc(ibv_req_notify_cq(conn_.cq(), 0), "ibv_req_notify_cq");
        armed_ = true;
    }
    if (std::size_t n = poll(out); n > 0) { // arrived before the (re-)arm
        return Waited{Waited::kCompletions, n, {}};
    }
    if (held_event_) {
        return Waited{Waited::kCmEvent, 0, std::exchange(held_event_, std::nullopt)};
    }
    check_port(now);
    // A port that is down wakes us when its outage outlasts the retries.
    wake_at = std::min(wake_at, port_deadline().value_or(wake_at));
    // Events another connection's thread read for us wake us through the
    // subscription's Waker; those already there are taken now.
    DeviceEventSubscription& events = conn_.device_events();
    while (!events.waker().sleep_begin()) {
        take_device_events(); // takes the wake too (DeviceEventSubscription::collect)
    }
    fds.add(conn_.comp_channel()->fd);
    fds.add(conn_.events().fd());
    fds.add(events.device_fd());
    fds.add(events.waker().fd());
    return std::nullopt;
}

std::optional<Waited> CompletionPoller::end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds) {
    // Entries begin_sleep added, in its order; none (or no revents) when
    // no poll(2) ran.
    auto ready = [&](std::size_t i) { return i < fds.size() && (fds[i].revents & POLLIN) != 0; };
    DeviceEventSubscription& events = conn_.device_events();
    events.waker().sleep_end(ready(3));
    if (ready(2) || events.pending()) {
        take_device_events();
    }
    if (ready(0)) {
        ibv_cq* cq = nullptr;
        void* ctx = nullptr;
        // The channel is non-blocking and only this poller reads it:
        // readable means an event is there. EAGAIN would only mean
        // another reader took it, and then the CQ is polled anyway.
        if (ibv_get_cq_event(conn_.comp_channel(), &cq, &ctx) == 0) {
            armed_ = false; // the notification fired: the next sleep re-arms
            if (++unacked_events_ >= kAckBatch) {
                ibv_ack_cq_events(conn_.cq(), unacked_events_);
                unacked_events_ = 0;
            }
        } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
            throw SystemError("ibv_get_cq_event", errno);
        }
        if (std::size_t n = poll(out); n > 0) {
            return Waited{Waited::kCompletions, n, {}};
        }
    }
    if (ready(1)) {
        if (Waited w = event_after_completions(out); w.kind != Waited::kTimeout) {
            return w;
        }
    }
    return std::nullopt;
}

Waited CompletionPoller::event_after_completions(std::span<ibv_wc> out) {
    std::optional<CmEvent> event = conn_.events().next(std::chrono::milliseconds(0));
    if (!event) {
        return {};
    }
    // The event was read after the CQ was last found empty: what the peer
    // sent before it may have completed since.
    if (std::size_t n = poll(out); n > 0) {
        held_event_ = std::move(event);
        return {Waited::kCompletions, n, {}};
    }
    return {Waited::kCmEvent, 0, std::move(event)};
}

} // namespace rdmastream
