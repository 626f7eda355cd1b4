// SPDX-License-Identifier: LGPL-2.1-or-later
// One reliable-connected QP set up with rdma_cm (the passive side's
// listener, which makes them from connect requests, is in listener.hpp).
//
// Both sides go in two steps so memory can be registered and receives posted
// on the connection's PD before the peer can use them:
//   active:  auto c = RcConnection::resolve(ep, opts);  ...register, post...  c.connect(data);
//   passive: Listener l(ep); auto c = l.wait_request(opts, t); ...register, post...  c.accept(data);
// Each connection owns its own event channel (the passive id is migrated off
// the listener's), so connections come and go independently.
#pragma once

#include "setup/cm_event_channel.hpp"
#include "setup/device_events.hpp"
#include "rdmastream/devices.hpp" // check_device_exists, for the stream ends
#include "rdmastream/endpoint.hpp"
#include "setup/verbs_owners.hpp"
#include "rdmastream/waker.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <span>
#include <string>

namespace rdmastream {

struct ConnectionOptions {
    std::uint32_t send_wr = 64; // send-queue depth
    std::uint32_t recv_wr = 64; // receive-queue depth (one per WRITE_WITH_IMM/SEND in flight)
    std::chrono::milliseconds step_timeout{5000}; // address and route resolution
    // A connect request to ESTABLISHED, either end. rdma_cm resends a lost
    // REQ, REP or RTU only after its response timeout (about 4.3 s:
    // CMA_CM_RESPONSE_TIMEOUT), so this rides out up to three losses on a
    // lossy wire (5 s did not: one lost RTU at 5 % loss failed a stream's
    // start on CI). A listener's half-open requests last at most this long.
    std::chrono::milliseconds establish_timeout{15000};
    // Transport retries are bounded so a dead peer becomes an error, not a
    // hang: 4.096 us * 2^ack_timeout per try, retry_count tries.
    std::uint8_t ack_timeout = 16; // ~268 ms
    std::uint8_t retry_count = 6;
    // A receiver-not-ready NAK is retried forever (7): a peer that is alive
    // but has not re-posted its receives (a process stopped or descheduled
    // for a moment, a consumer that holds the CPU) would otherwise end the
    // connection within milliseconds (7 tries of the minimum RNR timer).
    // The wait is bounded above the NIC instead: the sender gives up on a
    // message unacknowledged for SenderOptions::ack_limit, and on a stream
    // without progress for its idle timeout.
    std::uint8_t rnr_retry = 7;
    // RDMA device to use ("rxe0", "mlx5_0"); empty: whichever the route to
    // the peer (or the listening address) goes through.
    std::string device;
    // A protection domain to share with other connections on the same
    // device (so one registration serves them all, as a fan-out needs);
    // empty: the connection allocates its own.
    std::shared_ptr<ibv_pd> shared_pd;
    // Or a protection domain per device, from one source (a two-path
    // sender's: whichever device a path's route goes through, its frame
    // memory is registered there once, and a path redialled on it finds
    // the same keys). Set, it takes precedence over shared_pd. Called from
    // whichever thread opens the connection.
    std::function<std::shared_ptr<ibv_pd>(ibv_context* device)> pd_for;
};

// A protection domain several connections can share: it lives as long as
// the longest of them (and its creator).
std::shared_ptr<ibv_pd> make_shared_pd(ibv_context* device);

class RcConnection {
public:
    // Active side, first step: resolves address and route, creates PD, CQ, QP.
    static RcConnection resolve(const Endpoint& peer, const ConnectionOptions& opts);
    // Active side, second step: connects and waits for ESTABLISHED.
    // Throws CmEventError on REJECTED/UNREACHABLE/... (the reject's private
    // data is in the error's event).
    void connect(std::span<const std::byte> private_data);
    // Passive side, second step: accepts and waits for ESTABLISHED.
    void accept(std::span<const std::byte> private_data);
    // The same in two steps, for a caller that serves others meanwhile (a
    // fan-out admitting a receiver): accept_begin never blocks;
    // accept_done() says whether ESTABLISHED came, and throws
    // CmEventError on any other event.
    void accept_begin(std::span<const std::byte> private_data);
    bool accept_done();
    void reject(std::span<const std::byte> private_data) noexcept;
    // Starts a clean disconnect; the peer sees RDMA_CM_EVENT_DISCONNECTED.
    void disconnect() noexcept;

    ibv_pd* pd() const noexcept { return pd_.get(); }
    // The same, for memory that may outlive the connection (it keeps the PD).
    std::shared_ptr<ibv_pd> shared_pd() const noexcept { return pd_; }
    // Moves the QP to the error state, then waits (up to a second) until
    // the NIC has completed every send posted before: only then has it let
    // go of the memory they name, and the caller may reuse, deregister or
    // free it. The modify alone does not say that (ibv_modify_qp returns
    // while the NIC may still be reading a WQE's payload); a flushed marker
    // behind them does, as the kernel's ib_drain_sq. Completions polled
    // meanwhile are discarded: the stream end is done with them. Once.
    void stop_qp() noexcept;
    bool stopped() const noexcept { return stopped_; } // stop_qp() ran: the QP's error is our own doing
    // "198.18.0.2:40123", for messages.
    std::string peer_name() const;
    ibv_cq* cq() const noexcept { return cq_.get(); }
    ibv_qp* qp() const noexcept { return qp_->qp; }
    ibv_comp_channel* comp_channel() const noexcept { return comp_.get(); }
    ibv_context* device() const noexcept { return id_->verbs; }
    std::uint8_t port() const noexcept { return id_->port_num; } // of device()
    CmEventChannel& events() noexcept { return events_; }
    // This connection's share of the device's async events (its QP's and
    // CQ's, and the device's and ports'); see device_events.hpp.
    DeviceEventSubscription& device_events() noexcept { return *device_events_; }
    // What the peer sent with its connect request (passive) or accept (active).
    std::span<const std::byte> peer_private_data() const noexcept { return peer_data_.view(); }
    const ConnectionOptions& options() const noexcept { return opts_; }

    RcConnection(RcConnection&&) noexcept = default;
    RcConnection& operator=(RcConnection&&) = delete;
    ~RcConnection();

private:
    friend class Listener;
    RcConnection(CmEventChannel events, CmId id, const ConnectionOptions& opts);
    void create_resources();
    rdma_conn_param conn_param(std::span<const std::byte> private_data) const;

    ConnectionOptions opts_;
    CmPrivateData peer_data_;
    bool connected_ = false;
    // Members die bottom-up: QP, CQ, completion channel, PD, id, channel.
    CmEventChannel events_;
    CmId id_;
    std::shared_ptr<ibv_pd> pd_; // possibly shared with other connections
    CompletionChannel comp_;
    CompletionQueue cq_;
    CmQueuePair qp_;
    // Names the QP and CQ: unregistered before they go.
    std::unique_ptr<DeviceEventSubscription> device_events_;
    bool stopped_ = false; // stop_qp() ran
};

// Whether a failed connect is worth trying again: the peer's listener may
// not be up yet (rejected for lack of a listener, unreachable, timed out). A
// deliberate reject by the peer's application is final.
bool worth_retrying(const CmEventError& e) noexcept;

// The error at the end of retry_connect: names the peer and the last failure.
std::string describe_connect_failure(const Endpoint& peer, std::chrono::milliseconds patience, const CmEventError& e);

// `opts` with its waits cut to what is left of a caller's patience (but a
// second at least: a try needs one), so that a peer that never answers
// costs the patience asked for, not the 15 s an establishment may take.
ConnectionOptions within(ConnectionOptions opts, std::chrono::milliseconds left);

// Runs `attempt(left)` (which resolves and connects a fresh connection each
// time, its waits cut to `left`, the patience not yet spent: `within`)
// until it succeeds, fails for good, or `patience` runs out; tries every
// 200 ms. Interruptible: nullopt once `waker` (may be null) is woken
// between two tries.
template <typename Attempt>
auto retry_connect(const Endpoint& peer, std::chrono::milliseconds patience, Waker* waker, Attempt&& attempt)
    -> std::optional<decltype(attempt(patience))> {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
        try {
            return attempt(std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                 std::chrono::steady_clock::now()));
        } catch (const CmEventError& e) {
            if (!worth_retrying(e) || std::chrono::steady_clock::now() >= deadline) {
                throw CmEventError(describe_connect_failure(peer, patience, e), e);
            }
        }
        constexpr std::chrono::milliseconds kPause{200};
        if (waker == nullptr) {
            std::this_thread::sleep_for(kPause);
        } else if (wait_readable(-1, *waker, kPause) == Readiness::kWoken) {
            return std::nullopt;
        }
    }
}

// The same for a caller that nothing interrupts.
template <typename Attempt>
auto retry_connect(const Endpoint& peer, std::chrono::milliseconds patience, Attempt&& attempt)
    -> decltype(attempt(patience)) {
    return *retry_connect(peer, patience, nullptr, std::forward<Attempt>(attempt));
}

// retry_connect for a bare connection carrying `private_data`.
RcConnection connect_with_retry(const Endpoint& peer, const ConnectionOptions& opts,
                                std::chrono::milliseconds patience, std::span<const std::byte> private_data);

} // namespace rdmastream
