// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/rc_connection.hpp"

#include "setup/cm_setup.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "wire/work_id.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace rdmastream {

using detail::check_id_device;
using detail::create_id;
using detail::lookup;

namespace {

int to_ms(std::chrono::milliseconds t) { return static_cast<int>(t.count()); }

// rdma_disconnect, whose only expected failure is an id no longer
// connected (EINVAL: the peer's hang-up or the device's removal came
// first): then there is nobody left to tell. Anything else is reported.
void disconnect_id(rdma_cm_id* id) noexcept {
    if (rdma_disconnect(id) != 0 && errno != EINVAL) {
        std::fprintf(stderr, "rdmastream: rdma_disconnect failed: %s (the peer learns at its retry limit)\n",
                     std::strerror(errno));
    }
}

} // namespace

std::shared_ptr<ibv_pd> make_shared_pd(ibv_context* device) {
    return std::shared_ptr<ibv_pd>(check_ptr(ibv_alloc_pd(device), "ibv_alloc_pd"), detail::PdDeleter{});
}

std::string RcConnection::peer_name() const { return detail::peer_text(id_.get()); }

void RcConnection::stop_qp() noexcept {
    if (!qp_ || std::exchange(stopped_, true)) {
        return;
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    if (int rc = ibv_modify_qp(qp_->qp, &attr, IBV_QP_STATE); rc != 0) {
        // A QP that never left RESET has nothing posted to drain.
        std::fprintf(stderr, "rdmastream: ibv_modify_qp(ERR) failed: %s\n", std::strerror(rc));
        return;
    }
    // The drain marker: a wr_id of its own kind (work_id.hpp), and its
    // flushed completion comes after every send posted before it (a send
    // queue completes in order).
    constexpr std::uint64_t kDrainMarker = work_id(Work::kDrainMarker);
    ibv_send_wr wr{};
    wr.wr_id = kDrainMarker;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp_->qp, &wr, &bad); rc != 0) {
        // A QP never connected (INIT) refuses posts and has no sends either.
        return;
    }
    // Teardown only, and short: flushing takes the NIC microseconds. A
    // spin, not a completion-channel wait, so the poller's event state is
    // left alone (its events are acked as ever).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::array<ibv_wc, 16> wcs{};
    while (std::chrono::steady_clock::now() < deadline) {
        const int n = ibv_poll_cq(cq_.get(), static_cast<int>(wcs.size()), wcs.data());
        if (n < 0) {
            break; // the device is gone: nothing of it touches memory any more
        }
        for (int i = 0; i < n; ++i) {
            if (wcs[static_cast<std::size_t>(i)].wr_id == kDrainMarker) return;
        }
        if (n == 0) std::this_thread::yield();
    }
    std::fprintf(stderr, "rdmastream: the send queue of the connection to %s did not drain within 1 s of "
                         "stopping: its memory is released anyway\n",
                 peer_name().c_str());
}

RcConnection::RcConnection(CmEventChannel events, CmId id, const ConnectionOptions& opts)
    : opts_(opts), events_(std::move(events)), id_(std::move(id)) {}

RcConnection::~RcConnection() {
    if (connected_ && id_) {
        disconnect_id(id_.get()); // the peer learns at once, not at its retry limit
    }
}

void RcConnection::create_resources() {
    ibv_context* ctx = id_->verbs;
    ibv_device_attr attr{};
    check_rc(ibv_query_device(ctx, &attr), "ibv_query_device");
    const auto max_wr = static_cast<std::uint32_t>(attr.max_qp_wr);
    if (opts_.send_wr > max_wr || opts_.recv_wr > max_wr) {
        throw UserError(fmt::format("queue depth {} exceeds device {}'s max_qp_wr {}: a receiver's queues shrink with fewer "
                                    "slots; a sender's are fixed (sized for 256 slots), too deep for this device",
                                    std::max(opts_.send_wr, opts_.recv_wr), ibv_get_device_name(ctx->device),
                                    max_wr));
    }
    // One CQ for both directions, sized for every completion that can be
    // outstanding at once so it can never overrun.
    const std::uint32_t cqe = opts_.send_wr + opts_.recv_wr;
    if (cqe > static_cast<std::uint32_t>(attr.max_cqe)) {
        throw UserError(fmt::format("completion queue of {} entries exceeds device max_cqe {}", cqe, attr.max_cqe));
    }
    if (opts_.pd_for) {
        pd_ = opts_.pd_for(ctx);
    } else if (opts_.shared_pd) {
        if (opts_.shared_pd->context != ctx) {
            throw UserError(fmt::format("this connection is on RDMA device {}, the stream's memory on {}: all "
                                        "receivers of one sender must be reached through the same device",
                                        ibv_get_device_name(ctx->device),
                                        ibv_get_device_name(opts_.shared_pd->context->device)));
        }
        pd_ = opts_.shared_pd;
    } else {
        pd_ = make_shared_pd(ctx);
    }
    comp_.reset(check_ptr(ibv_create_comp_channel(ctx), "ibv_create_comp_channel"));
    cq_.reset(check_ptr(ibv_create_cq(ctx, static_cast<int>(cqe), nullptr, comp_.get(), 0), "ibv_create_cq"));

    ibv_qp_init_attr qp_attr{};
    qp_attr.send_cq = cq_.get();
    qp_attr.recv_cq = cq_.get();
    qp_attr.qp_type = IBV_QPT_RC;
    qp_attr.sq_sig_all = 0; // selective signalling: the poster decides
    qp_attr.cap.max_send_wr = opts_.send_wr;
    qp_attr.cap.max_recv_wr = opts_.recv_wr;
    qp_attr.cap.max_send_sge = 3; // slot header, payload, side data: gathered by the NIC
    qp_attr.cap.max_recv_sge = 1;
    check_errno(rdma_create_qp(id_.get(), pd_.get(), &qp_attr), "rdma_create_qp");
    qp_.reset(id_.get());
    device_events_ = std::make_unique<DeviceEventSubscription>(DeviceEventDispatcher::of(ctx), qp_->qp, cq_.get());
}

rdma_conn_param RcConnection::conn_param(std::span<const std::byte> private_data) const {
    rdma_conn_param p{};
    p.private_data = private_data.data();
    p.private_data_len = static_cast<std::uint8_t>(private_data.size());
    p.responder_resources = 1;
    p.initiator_depth = 1;
    p.retry_count = opts_.retry_count;
    p.rnr_retry_count = opts_.rnr_retry;
    return p;
}

RcConnection RcConnection::resolve(const Endpoint& peer, const ConnectionOptions& opts) {
    const detail::AddrInfo ai = lookup(peer, false);
    CmEventChannel events;
    CmId id = create_id(events);
    check_errno(rdma_resolve_addr(id.get(), nullptr, ai->ai_addr, to_ms(opts.step_timeout)), "rdma_resolve_addr");
    events.expect(RDMA_CM_EVENT_ADDR_RESOLVED, opts.step_timeout + std::chrono::seconds(1),
                  "resolving the peer's address");
    check_id_device(id.get(), opts.device, fmt::format("the route to {}", peer.host).c_str());
    std::uint8_t ack_timeout = opts.ack_timeout;
    check_errno(rdma_set_option(id.get(), RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ack_timeout,
                                sizeof ack_timeout),
                "rdma_set_option(ACK_TIMEOUT)");
    check_errno(rdma_resolve_route(id.get(), to_ms(opts.step_timeout)), "rdma_resolve_route");
    events.expect(RDMA_CM_EVENT_ROUTE_RESOLVED, opts.step_timeout + std::chrono::seconds(1),
                  "resolving the route to the peer");
    RcConnection c(std::move(events), std::move(id), opts);
    c.create_resources();
    return c;
}

void RcConnection::connect(std::span<const std::byte> private_data) {
    const rdma_conn_param p = conn_param(private_data);
    check_errno(rdma_connect(id_.get(), const_cast<rdma_conn_param*>(&p)), "rdma_connect");
    peer_data_ = events_.expect(RDMA_CM_EVENT_ESTABLISHED, opts_.establish_timeout, "connecting").private_data;
    connected_ = true;
}

void RcConnection::accept(std::span<const std::byte> private_data) {
    accept_begin(private_data);
    events_.expect(RDMA_CM_EVENT_ESTABLISHED, opts_.establish_timeout, "accepting");
    connected_ = true;
}

void RcConnection::accept_begin(std::span<const std::byte> private_data) {
    rdma_conn_param p = conn_param(private_data);
    check_errno(rdma_accept(id_.get(), &p), "rdma_accept");
}

bool RcConnection::accept_done() {
    if (connected_) {
        return true;
    }
    if (!events_.next(std::chrono::milliseconds(0), RDMA_CM_EVENT_ESTABLISHED, "accepting")) {
        return false;
    }
    connected_ = true;
    return true;
}

void RcConnection::reject(std::span<const std::byte> private_data) noexcept {
    // The caller goes on to throw the reason itself; a reject that fails
    // (EINVAL: the peer gave its request up) only means the peer is not
    // told, and says so here, the one place left to say it.
    if (rdma_reject(id_.get(), private_data.data(), static_cast<std::uint8_t>(private_data.size())) != 0) {
        std::fprintf(stderr, "rdmastream: rdma_reject to %s failed: %s (it is not told why)\n", peer_name().c_str(),
                     std::strerror(errno));
    }
}

void RcConnection::disconnect() noexcept {
    if (connected_) {
        disconnect_id(id_.get());
        connected_ = false;
    }
}

// IB CM reject reason 28: the remote application refused us on purpose.
constexpr int kConsumerReject = 28;

bool worth_retrying(const CmEventError& e) noexcept {
    if (!e.event()) {
        return true; // timed out
    }
    switch (e.event()->type) {
    case RDMA_CM_EVENT_REJECTED: return e.event()->status != kConsumerReject;
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR: return true;
    default: return false;
    }
}

std::string describe_connect_failure(const Endpoint& peer, std::chrono::milliseconds patience, const CmEventError& e) {
    std::string hint;
    if (!e.event()) {
        hint = " (no answer: check the address, and that the peer's RDMA link is up)";
    } else if (e.event()->type == RDMA_CM_EVENT_REJECTED && e.event()->status != kConsumerReject) {
        hint = " (nothing listens there: start the other end, or check the address and port)";
    } else if (e.event()->type == RDMA_CM_EVENT_ADDR_ERROR) {
        hint = " (no RDMA device has a route to that address: check `rdma link show` and `ip route`)";
    }
    return fmt::format("cannot connect to {}:{} within {} ms: {}{}", peer.host, peer.port, patience.count(), e.what(),
                       hint);
}

ConnectionOptions within(ConnectionOptions opts, std::chrono::milliseconds left) {
    constexpr std::chrono::milliseconds kShortestTry{1000};
    const std::chrono::milliseconds cap = std::max(left, kShortestTry);
    opts.step_timeout = std::min(opts.step_timeout, cap);
    opts.establish_timeout = std::min(opts.establish_timeout, cap);
    return opts;
}

RcConnection connect_with_retry(const Endpoint& peer, const ConnectionOptions& opts,
                                std::chrono::milliseconds patience, std::span<const std::byte> private_data) {
    return retry_connect(peer, patience, [&](std::chrono::milliseconds left) {
        RcConnection c = RcConnection::resolve(peer, within(opts, left));
        c.connect(private_data);
        return c;
    });
}

} // namespace rdmastream
