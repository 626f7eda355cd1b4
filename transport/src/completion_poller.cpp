#include "rdmastream/completion_poller.hpp"

#include "rdmastream/error.hpp"

#include <fcntl.h>
#include <poll.h>

#include <fmt/format.h>

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

CompletionPoller::CompletionPoller(RcConnection& conn, PollMode mode) : conn_(conn), mode_(mode) {
    set_nonblocking(conn_.comp_channel()->fd, "completion channel");
    // The device's async fd is shared by every connection on the device;
    // each poller reads what arrives and acts on what concerns it.
    set_nonblocking(conn_.device()->async_fd, "device async event fd");
}

void CompletionPoller::fail(const ibv_wc& wc, const char* side) {
    // The async event that explains the failure is usually queued already;
    // give it a moment if not, since "local QP operation error" alone tells
    // a user nothing.
    for (int i = 0; i < 20; ++i) {
        drain_async_events(); // throws with the device's own event if there is one
        pollfd pfd{conn_.device()->async_fd, POLLIN, 0};
        if (::poll(&pfd, 1, 5) <= 0) break;
    }
    throw std::runtime_error(fmt::format("{}: work completion failed: {}", side, describe_failed_wc(wc)));
}

std::size_t CompletionPoller::spin(std::span<ibv_wc> out, std::chrono::milliseconds timeout,
                                   std::optional<CmEvent>& event) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    auto next_look = Clock::now();
    for (;;) {
        if (std::size_t n = poll(out); n > 0) {
            return n;
        }
        const auto now = Clock::now(); // vDSO: no syscall
        if (now >= next_look) {        // the event fds cost syscalls: once a millisecond
            drain_async_events();
            event = conn_.events().next(std::chrono::milliseconds(0));
            if (event || now >= deadline) {
                return 0;
            }
            next_look = now + std::chrono::milliseconds(1);
        }
    }
}

void CompletionPoller::drain_async_events() {
    ibv_async_event ev{};
    while (ibv_get_async_event(conn_.device(), &ev) == 0) {
        const ibv_event_type type = ev.event_type;
        const bool ours = (ev.element.qp == conn_.qp() &&
                           (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
                            type == IBV_EVENT_QP_ACCESS_ERR || type == IBV_EVENT_PATH_MIG_ERR)) ||
                          (ev.element.cq == conn_.cq() && type == IBV_EVENT_CQ_ERR);
        const bool device_wide = type == IBV_EVENT_DEVICE_FATAL || type == IBV_EVENT_PORT_ERR;
        ibv_ack_async_event(&ev); // always, or destroying the QP/CQ would block
        if (ours || device_wide) {
            throw std::runtime_error(fmt::format("RDMA device {} reported {}{}",
                                                 ibv_get_device_name(conn_.device()->device),
                                                 ibv_event_type_str(type),
                                                 device_wide ? ": the link or device is down" : ""));
        }
    }
}

CompletionPoller::~CompletionPoller() {
    if (unacked_events_ > 0) {
        ibv_ack_cq_events(conn_.cq(), unacked_events_);
    }
}

std::size_t CompletionPoller::poll(std::span<ibv_wc> out) {
    const int n = ibv_poll_cq(conn_.cq(), static_cast<int>(out.size()), out.data());
    if (n < 0) {
        throw SystemError("ibv_poll_cq", -n);
    }
    return static_cast<std::size_t>(n);
}

std::size_t CompletionPoller::wait(std::span<ibv_wc> out, std::chrono::milliseconds timeout,
                                   std::optional<CmEvent>& event) {
    event.reset();
    if (std::size_t n = poll(out); n > 0) {
        return n;
    }
    if (mode_ == PollMode::kBusy) {
        return spin(out, timeout, event);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        check_rc(ibv_req_notify_cq(conn_.cq(), 0), "ibv_req_notify_cq");
        if (std::size_t n = poll(out); n > 0) { // arrived before the re-arm
            return n;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return 0;
        }
        pollfd fds[3] = {{conn_.comp_channel()->fd, POLLIN, 0},
                         {conn_.events().fd(), POLLIN, 0},
                         {conn_.device()->async_fd, POLLIN, 0}};
        const int rc = ::poll(fds, 3, static_cast<int>(left.count()));
        if (rc < 0 && errno != EINTR) {
            throw SystemError("poll(completion channel)", errno);
        }
        if (fds[2].revents & POLLIN) {
            drain_async_events();
        }
        if (fds[0].revents & POLLIN) {
            ibv_cq* cq = nullptr;
            void* ctx = nullptr;
            if (ibv_get_cq_event(conn_.comp_channel(), &cq, &ctx) == 0 && ++unacked_events_ >= kAckBatch) {
                ibv_ack_cq_events(conn_.cq(), unacked_events_);
                unacked_events_ = 0;
            }
            if (std::size_t n = poll(out); n > 0) {
                return n;
            }
        }
        // Completions first: a peer that hangs up right after its last
        // message must not hide that message.
        if (fds[1].revents & POLLIN) {
            event = conn_.events().next(std::chrono::milliseconds(0));
            if (event) {
                return 0;
            }
        }
    }
}

} // namespace rdmastream
