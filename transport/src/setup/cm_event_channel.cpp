// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/cm_event_channel.hpp"

#include "rdmastream/devices.hpp"
#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <fcntl.h>
#include <poll.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace rdmastream {

std::string describe(const CmEvent& ev) {
    std::string s = rdma_event_str(ev.type);
    if (ev.status != 0) {
        s += fmt::format(" (status {})", ev.status);
    }
    return s;
}

std::string explain_lost_connection(const CmEvent& ev) {
    switch (ev.type) {
    case RDMA_CM_EVENT_DISCONNECTED: return "the peer disconnected (" + describe(ev) + ")";
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return "the RDMA device was removed (`rdma link delete`, driver unload or hot unplug; " + describe(ev) + ")";
    case RDMA_CM_EVENT_ADDR_CHANGE:
        return "the local address moved to another device (" + describe(ev) + "): reconnect";
    default: return "unexpected connection event " + describe(ev);
    }
}

CmEventChannel::CmEventChannel() {
    rdma_event_channel* ch = rdma_create_event_channel();
    if (ch == nullptr) {
        if (errno == ENODEV) {
            throw UserError(no_device_message(fmt::format("rdma_create_event_channel: {}", std::strerror(errno))));
        }
        throw SystemError("rdma_create_event_channel", errno);
    }
    ch_.reset(ch);
    // Non-blocking so that next() can wait on the fd with a timeout.
    const int flags = fcntl(ch_->fd, F_GETFL);
    check_errno(flags < 0 ? -1 : fcntl(ch_->fd, F_SETFL, flags | O_NONBLOCK), "fcntl(O_NONBLOCK)");
}

std::optional<CmEvent> CmEventChannel::next(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // The fd first: rdma_get_cm_event on an empty channel costs librdmacm a
    // malloc, a write(2) answered EAGAIN and a free, and the data paths look
    // here often (a sender every 10 ms). poll(2) alone costs one syscall.
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd pfd{ch_->fd, POLLIN, 0};
        const int rc = poll(&pfd, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
        if (rc < 0 && errno != EINTR) {
            throw SystemError("poll(rdma_cm event channel)", errno);
        }
        if (rc > 0) {
            rdma_cm_event* raw = nullptr;
            if (rdma_get_cm_event(ch_.get(), &raw) == 0) {
                CmEvent ev;
                ev.type = raw->event;
                ev.status = raw->status;
                ev.id = raw->id;
                const auto& conn = raw->param.conn;
                if (conn.private_data != nullptr && conn.private_data_len > 0) {
                    ev.private_data.size = std::min<std::size_t>(conn.private_data_len, ev.private_data.bytes.size());
                    std::memcpy(ev.private_data.bytes.data(), conn.private_data, ev.private_data.size);
                }
                // Acked before a request's id gets its owner: destroying an
                // id waits for its events' acks. (rdma_ack_cm_event fails
                // for a null event only.)
                check_errno(rdma_ack_cm_event(raw), "rdma_ack_cm_event");
                if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
                    ev.request.reset(ev.id);
                }
                return ev;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                throw SystemError("rdma_get_cm_event", errno);
            }
        }
        if (left.count() <= 0) {
            return std::nullopt;
        }
    }
}

CmEvent CmEventChannel::expect(rdma_cm_event_type want, std::chrono::milliseconds timeout, const char* what) {
    auto ev = next(timeout, want, what);
    if (!ev) {
        throw CmEventError(fmt::format("{}: no {} within {} ms", what, rdma_event_str(want), timeout.count()),
                           std::nullopt);
    }
    return std::move(*ev);
}

std::optional<CmEvent> CmEventChannel::next(std::chrono::milliseconds timeout, rdma_cm_event_type want,
                                            const char* what) {
    auto ev = next(timeout);
    if (ev && ev->type != want) {
        std::string msg = fmt::format("{}: expected {}, got {}", what, rdma_event_str(want), describe(*ev));
        if (ev->status < 0) {
            msg += fmt::format(": {}", std::strerror(-ev->status));
        }
        throw CmEventError(msg, std::move(ev));
    }
    return ev;
}

} // namespace rdmastream
