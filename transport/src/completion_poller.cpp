#include "rdmastream/completion_poller.hpp"

#include "rdmastream/error.hpp"

#include <fcntl.h>
#include <poll.h>

#include <fmt/format.h>

namespace rdmastream {

namespace {
constexpr unsigned kAckBatch = 64;

const char* opcode_name(ibv_wc_opcode op) {
    switch (op) {
    case IBV_WC_SEND: return "SEND";
    case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
    case IBV_WC_RDMA_READ: return "RDMA_READ";
    case IBV_WC_RECV: return "RECV";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
    default: return "other";
    }
}
} // namespace

std::string describe_failed_wc(const ibv_wc& wc) {
    // Flushed completions carry only wr_id and status; opcode is undefined then.
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
        return fmt::format("{} (wr_id {}): the connection had already failed", ibv_wc_status_str(wc.status),
                           wc.wr_id);
    }
    return fmt::format("{} (wr_id {}, opcode {}, vendor error {:#x})", ibv_wc_status_str(wc.status), wc.wr_id,
                       opcode_name(wc.opcode), wc.vendor_err);
}

CompletionPoller::CompletionPoller(RcConnection& conn) : conn_(conn) {
    const int fd = conn_.comp_channel()->fd;
    const int flags = fcntl(fd, F_GETFL);
    check_errno(flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK), "fcntl(completion channel)");
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
        pollfd fds[2] = {{conn_.comp_channel()->fd, POLLIN, 0}, {conn_.events().fd(), POLLIN, 0}};
        const int rc = ::poll(fds, 2, static_cast<int>(left.count()));
        if (rc < 0 && errno != EINTR) {
            throw SystemError("poll(completion channel)", errno);
        }
        if (fds[1].revents & POLLIN) {
            event = conn_.events().next(std::chrono::milliseconds(0));
            if (event) {
                return 0;
            }
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
    }
}

} // namespace rdmastream
