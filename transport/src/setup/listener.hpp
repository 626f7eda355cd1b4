// SPDX-License-Identifier: LGPL-2.1-or-later
// The passive side's listener: binds and listens with rdma_cm, screens each
// connect request (allow list, private data, device) before anything is made
// for it, and turns those that pass into RcConnections to accept.
#pragma once

#include "rdmastream/allow_list.hpp"
#include "rdmastream/door.hpp"
#include "setup/cm_event_channel.hpp"
#include "setup/rc_connection.hpp"
#include "setup/verbs_owners.hpp"
#include "wire/wire.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace rdmastream {

// A Listener::Screen's refusal with a reason of its own (e.g. kBusy: the
// fan-out is full); ProtocolError and UserError are refused as kProtocol and
// kConfig.
class PeerRefused : public std::runtime_error {
public:
    PeerRefused(wire::RejectReason reason, const std::string& text) : std::runtime_error(text), reason_(reason) {}
    wire::RejectReason reason() const noexcept { return reason_; }

private:
    wire::RejectReason reason_;
};

// The listener itself can take no more requests: its device was removed, or
// its event channel failed. Not one peer's fault: the caller stops
// listening (a fan-out stops admitting; the program ends, saying why).
class ListenerError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
    // `what`: the cause and what to do; `cause`: the cause alone (for a
    // caller that does something about it itself).
    ListenerError(const std::string& what, std::string cause) : std::runtime_error(what), cause_(std::move(cause)) {}
    std::string cause() const { return cause_.empty() ? std::string(what()) : cause_; }

private:
    std::string cause_;
};

// A listener is a service: a peer it refuses (not on the allow list, bad
// private data, a handshake it abandons or never completes) is logged in one
// line naming its address and the reason, its id is released at once, and
// the listener goes on with the next request. Nothing is allocated for a
// request (no PD, CQ, QP, memory) before its address and private data pass.
class Listener {
public:
    using LogFn = std::function<void(const std::string&)>;
    // Who sent a connect request.
    struct Requester {
        std::string name;    // "198.18.0.2:40123", for messages
        std::string address; // "198.18.0.2": what bounds per source count
    };
    // Checks a request before any resource is made for it; throws
    // ProtocolError, UserError or PeerRefused to refuse it (the text goes to
    // the peer in the reject, and to the log).
    using Screen = std::function<void(std::span<const std::byte> private_data, const Requester& peer)>;

    // Binds and listens. A port in use is a UserError naming it.
    explicit Listener(const Endpoint& local);
    std::uint16_t port() const noexcept { return port_; }
    // The device the listener is bound to; nullptr when bound to every
    // address (or not listening: let_go_of_device).
    ibv_context* device() const noexcept { return id_ ? id_->verbs : nullptr; }

    // After a ListenerError for its device's removal: the listening id goes,
    // so that the device can (a kernel that cannot take a device's
    // resources back itself, rxe, waits for it). Requests find nobody until
    // listen_again.
    void let_go_of_device() noexcept { id_.reset(); }
    bool listening() const noexcept { return id_ != nullptr; }
    // Binds and listens again on the address and port it had; throws as the
    // constructor does (UserError while no device has the address). The
    // calls that read requests do it themselves when not listening.
    void listen_again();
    int fd() const noexcept { return events_.fd(); }

    // Who may connect (default: everyone).
    void set_allow(AllowList allow) { allow_ = std::move(allow); }
    const AllowList& allow() const noexcept { return allow_; }
    // How many peers may be on their way in at once (PendingPeers).
    void set_pending_limits(PendingLimits l) noexcept { pending_ = l; }
    PendingLimits pending_limits() const noexcept { return pending_; }
    // Where refusals go, one line each ("refused 198.18.0.2:40123: ...");
    // default: stderr.
    void set_log(LogFn log) { log_ = std::move(log); }
    void log_refusal(const std::string& peer, const std::string& reason) const;

    // A waiting connect request that passes the allow list and `screen`, if
    // any (never blocks); like wait_request. Refused requests are logged.
    std::optional<RcConnection> try_request(const ConnectionOptions& opts, const Screen& screen = {});

    // Waits for a connect request that passes the allow list and `screen`,
    // refusing (and logging) the others meanwhile; the returned connection
    // has its resources and must be accept()ed or reject()ed. Throws
    // CmEventError on timeout.
    RcConnection wait_request(const ConnectionOptions& opts, std::chrono::milliseconds timeout,
                              const Screen& screen = {});

    // Refuses every request waiting now with `reason` (never blocks);
    // returns how many. For a listener that serves one peer at a time.
    std::size_t refuse_waiting(wire::RejectReason reason, const std::string& text);

    // Every call that reads the listener's events throws ListenerError once
    // the listener is unusable (RDMA_CM_EVENT_DEVICE_REMOVAL on its device,
    // its event channel failing), naming the device and the fix.

private:
    // The next event (waiting up to `timeout`); ListenerError if the
    // channel fails.
    std::optional<CmEvent> next_event(std::chrono::milliseconds timeout);
    // An event other than a connect request: DEVICE_REMOVAL throws
    // ListenerError, anything else is logged and dropped.
    void not_a_request(const CmEvent& ev) const;

    // The request's connection (its id taken from `req`), if it may have
    // resources: else refused (logged), its id released, and nullopt.
    std::optional<RcConnection> screened(CmEvent&& req, const ConnectionOptions& opts, const Screen& screen);

    void bind_and_listen(const Endpoint& local); // id_ made, bound, listening; port_ and device_ set

    CmEventChannel events_;
    CmId id_;
    Endpoint local_;           // the address bound (its port the one bound: listen_again takes the same)
    std::uint16_t port_ = 0;
    std::string device_; // the device bound to ("rxe0"), or "" for every address
    AllowList allow_;
    PendingLimits pending_;
    LogFn log_;
};

} // namespace rdmastream
