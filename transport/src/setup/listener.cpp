// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/listener.hpp"

#include "setup/cm_setup.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace rdmastream {

using detail::check_id_device;
using detail::create_id;
using detail::lookup;
using detail::peer_text;

namespace {
// Whether rdma_cm can bind `local`'s address on some free port: a probe,
// whose failing bind is the answer, not an error.
bool address_binds(const Endpoint& local) {
    CmEventChannel events;
    CmId probe = create_id(events);
    const detail::AddrInfo ai = lookup(Endpoint{local.host, 0}, true);
    return rdma_bind_addr(probe.get(), ai->ai_addr) == 0;
}
} // namespace

Listener::Listener(const Endpoint& local) { bind_and_listen(local); }

void Listener::listen_again() {
    if (!id_) bind_and_listen(local_);
}

void Listener::bind_and_listen(const Endpoint& local) {
    CmId id = create_id(events_); // kept only once listening: listen_again tries again
    const detail::AddrInfo ai = lookup(local, true);
    if (rdma_bind_addr(id.get(), ai->ai_addr) != 0) {
        const int err = errno;
        if (err == EADDRINUSE) {
            throw UserError(fmt::format("port {} is already in use: stop the other listener or pick "
                                        "another port",
                                        local.port));
        }
        // rdma_cm reports a port another listener holds as EADDRNOTAVAIL
        // too (cma_check_port), not EADDRINUSE as sockets do: the same
        // address on a free port tells the two causes apart.
        if (err == EADDRNOTAVAIL && address_binds(local)) {
            throw UserError(fmt::format("port {} is already in use by another RDMA listener: stop it or pick "
                                        "another port",
                                        local.port));
        }
        if (err == EADDRNOTAVAIL || err == ENODEV) {
            throw UserError(fmt::format("cannot listen on '{}': no RDMA device has that address "
                                        "(check `rdma link show` and `ip addr`)",
                                        local.host));
        }
        throw SystemError("rdma_bind_addr", err);
    }
    check_errno(rdma_listen(id.get(), 8), "rdma_listen");
    if (id->verbs != nullptr) { // bound to an address, so to its device
        device_ = ibv_get_device_name(id->verbs->device);
    }
    port_ = ntohs(rdma_get_src_port(id.get()));
    local_ = Endpoint{local.host, port_};
    id_ = std::move(id);
}

void Listener::log_refusal(const std::string& peer, const std::string& reason) const {
    const std::string line = fmt::format("refused {}: {}", peer, reason);
    if (log_) {
        log_(line);
    } else {
        std::fprintf(stderr, "rdmastream: %s\n", line.c_str());
    }
}

namespace {
// Refuses a request with our reason; returns "" or, when the reject could
// not be sent (EINVAL: the peer gave its request up first), what to add to
// the refusal's log line. The id goes either way.
std::string reject_with(rdma_cm_id* id, wire::RejectReason reason, const std::string& text) {
    const auto bytes = wire::encode(wire::Reject{reason, text});
    if (rdma_reject(id, bytes.data(), static_cast<std::uint8_t>(bytes.size())) != 0) {
        return fmt::format(" (not told: rdma_reject failed: {})", std::strerror(errno));
    }
    return {};
}
} // namespace

std::optional<RcConnection> Listener::screened(CmEvent&& req, const ConnectionOptions& opts,
                                               const Screen& screen) {
    CmId id = std::move(req.request); // released on every path out of here but the connection's
    const Requester peer{peer_text(id.get()), address_text(rdma_get_peer_addr(id.get()))};
    if (!allow_.allows(rdma_get_peer_addr(id.get()))) {
        const std::string told =
            reject_with(id.get(), wire::RejectReason::kConfig, "this listener does not take connections from your address");
        log_refusal(peer.name, fmt::format("its address is not allowed (allowed: {}){}", allow_.describe(), told));
        return std::nullopt;
    }
    try {
        if (screen) screen(req.private_bytes(), peer);
        check_id_device(id.get(), opts.device, "the connection request");
    } catch (const PeerRefused& e) {
        log_refusal(peer.name, e.what() + reject_with(id.get(), e.reason(), e.what()));
        return std::nullopt;
    } catch (const ProtocolError& e) {
        log_refusal(peer.name, e.what() + reject_with(id.get(), wire::RejectReason::kProtocol, e.what()));
        return std::nullopt;
    } catch (const UserError& e) {
        log_refusal(peer.name, e.what() + reject_with(id.get(), wire::RejectReason::kConfig, e.what()));
        return std::nullopt;
    }
    CmEventChannel own;
    check_errno(rdma_migrate_id(id.get(), own.get()), "rdma_migrate_id");
    RcConnection c(std::move(own), std::move(id), opts);
    c.peer_data_ = req.private_data;
    try {
        c.create_resources();
    } catch (const SystemError& e) {
        // This peer's resources only: a request whose peer gave it up before
        // we got to it (rxe fails rdma_create_qp with EINVAL on such an id),
        // or a device out of QPs or memory for one more. The peer goes, with
        // all made for it; the listener serves the next.
        const std::string told =
            reject_with(c.id_.get(), wire::RejectReason::kResources, "the listener could not set up the connection");
        log_refusal(peer.name, fmt::format("could not set up its connection (or it gave its request up): {}{}", e.what(), told));
        return std::nullopt;
    }
    return c;
}

std::optional<CmEvent> Listener::next_event(std::chrono::milliseconds timeout) {
    listen_again(); // after its device went: back, or a UserError naming the address
    try {
        return events_.next(timeout);
    } catch (const SystemError& e) {
        throw ListenerError(fmt::format("the listener on port {} can take no more connections: {}", port(), e.what()));
    }
}

void Listener::not_a_request(const CmEvent& ev) const {
    if (ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
        // The kernel has let go of the listening id's device; the id takes
        // no more requests and only waits for us to destroy it.
        const std::string cause = fmt::format(
            "the RDMA device {} under the listener on port {} was removed (`rdma link delete`, driver unload or "
            "hot unplug; {})",
            device_.empty() ? "(unknown)" : device_, port(), describe(ev));
        throw ListenerError(cause + ": bring the device back (`rdma link add`, see docs/softroce.md; `rdma link "
                                    "show` must list it) and start listening again",
                            cause);
    }
    // Nothing else is meant for a listening id (a request's own events go
    // to its connection's channel once migrated): said, and dropped.
    const std::string line = fmt::format("listener on port {}: ignored {}", port(), describe(ev));
    if (log_) {
        log_(line);
    } else {
        std::fprintf(stderr, "rdmastream: %s\n", line.c_str());
    }
}

std::optional<RcConnection> Listener::try_request(const ConnectionOptions& opts, const Screen& screen) {
    while (auto ev = next_event(std::chrono::milliseconds(0))) {
        if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            not_a_request(*ev);
            continue;
        }
        if (auto c = screened(std::move(*ev), opts, screen)) {
            return c;
        }
    }
    return std::nullopt;
}

RcConnection Listener::wait_request(const ConnectionOptions& opts, std::chrono::milliseconds timeout,
                                    const Screen& screen) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::max(std::chrono::milliseconds(0),
                                   std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - std::chrono::steady_clock::now()));
        std::optional<CmEvent> ev = next_event(left);
        if (!ev) {
            throw CmEventError(fmt::format("waiting for a peer: no {} within {} ms",
                                           rdma_event_str(RDMA_CM_EVENT_CONNECT_REQUEST), timeout.count()),
                               std::nullopt);
        }
        if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            not_a_request(*ev);
            continue;
        }
        if (auto c = screened(std::move(*ev), opts, screen)) {
            return std::move(*c);
        }
    }
}

std::size_t Listener::refuse_waiting(wire::RejectReason reason, const std::string& text) {
    std::size_t n = 0;
    while (auto ev = next_event(std::chrono::milliseconds(0))) {
        if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            not_a_request(*ev);
            continue;
        }
        const CmId id = std::move(ev->request); // released once refused
        const std::string peer = peer_text(id.get());
        log_refusal(peer, text + reject_with(id.get(), reason, text));
        ++n;
    }
    return n;
}

} // namespace rdmastream
