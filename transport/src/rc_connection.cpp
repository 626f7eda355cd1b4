#include "rdmastream/rc_connection.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/wire.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace rdmastream {

namespace {

struct AddrInfoDeleter {
    void operator()(addrinfo* ai) const noexcept { freeaddrinfo(ai); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfo lookup(const Endpoint& ep, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(ep.port);
    const int rc = getaddrinfo(ep.host.empty() ? nullptr : ep.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
        throw UserError(fmt::format("cannot resolve '{}': {}", ep.host, gai_strerror(rc)));
    }
    return AddrInfo(res);
}

CmId create_id(const CmEventChannel& ch) {
    rdma_cm_id* id = nullptr;
    check_errno(rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP), "rdma_create_id");
    return CmId(id);
}

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

namespace detail {
void report_destroy_failure(const char* call, int rc) noexcept {
    std::fprintf(stderr, "rdmastream: %s failed: %s (a child object is still alive)\n", call, std::strerror(rc));
}
} // namespace detail

namespace {
struct DeviceListDeleter {
    void operator()(ibv_device** list) const noexcept { ibv_free_device_list(list); }
};

// The device a resolved or requested id is on must be the one asked for.
void check_id_device(const rdma_cm_id* id, const std::string& want, const char* what) {
    if (want.empty() || id->verbs == nullptr) {
        return;
    }
    const std::string got = ibv_get_device_name(id->verbs->device);
    if (got != want) {
        throw UserError(fmt::format("{} goes through RDMA device {}, not {}: use an address on {} (see `rdma link "
                                    "show`), or drop the device option",
                                    what, got, want, want));
    }
}
} // namespace

void check_device_exists(const std::string& name) {
    int n = 0;
    std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
    std::string names;
    for (int i = 0; list && i < n; ++i) {
        const char* dev = ibv_get_device_name(list.get()[i]);
        if (name == dev) {
            return;
        }
        names += names.empty() ? dev : std::string(", ") + dev;
    }
    throw UserError(names.empty() ? fmt::format("there is no RDMA device {}: this machine has none (see "
                                                "docs/softroce.md to set up Soft-RoCE)",
                                                name)
                                  : fmt::format("there is no RDMA device {}; this machine has: {}", name, names));
}

std::shared_ptr<ibv_pd> make_shared_pd(ibv_context* device) {
    return std::shared_ptr<ibv_pd>(check_ptr(ibv_alloc_pd(device), "ibv_alloc_pd"), detail::PdDeleter{});
}

std::string RcConnection::peer_name() const {
    return fmt::format("{}:{}", address_text(rdma_get_peer_addr(id_.get())), ntohs(rdma_get_dst_port(id_.get())));
}

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
    // The drain marker: no stream end's wr_id equals it (theirs are an
    // index, a tag bit above a small index, or UINT64_MAX), and its flushed
    // completion comes after every send posted before it (a send queue
    // completes in order).
    constexpr std::uint64_t kDrainMarker = UINT64_MAX - 1;
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

Endpoint parse_endpoint(const std::string& text) {
    Endpoint ep;
    std::string port_text;
    bool has_port = false;
    if (!text.empty() && text.front() == '[') { // [v6]:port
        const auto close = text.find(']');
        if (close == std::string::npos) {
            throw UserError(fmt::format("bad address '{}': missing ']'", text));
        }
        ep.host = text.substr(1, close - 1);
        if (close + 1 < text.size()) {
            if (text[close + 1] != ':') throw UserError(fmt::format("bad address '{}'", text));
            port_text = text.substr(close + 2);
            has_port = true;
        }
    } else if (const auto colon = text.rfind(':'); colon != std::string::npos &&
                                                   text.find(':') == colon) { // one colon: host:port
        ep.host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
        has_port = true;
    } else {
        ep.host = text;
    }
    if (has_port) {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc{} || end != port_text.data() + port_text.size() || value == 0 || value > 65535) {
            throw UserError(fmt::format("bad port '{}' in '{}': use 1..65535", port_text, text));
        }
        ep.port = static_cast<std::uint16_t>(value);
    }
    return ep;
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
    if (opts_.shared_pd) {
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
    qp_attr.cap.max_send_sge = 2; // slot header + payload, gathered by the NIC
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
    const AddrInfo ai = lookup(peer, false);
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
    peer_data_ = events_.expect(RDMA_CM_EVENT_ESTABLISHED, opts_.step_timeout, "connecting");
    connected_ = true;
}

void RcConnection::accept(std::span<const std::byte> private_data) {
    accept_begin(private_data);
    events_.expect(RDMA_CM_EVENT_ESTABLISHED, opts_.step_timeout, "accepting");
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

RcConnection connect_with_retry(const Endpoint& peer, const ConnectionOptions& opts,
                                std::chrono::milliseconds patience, std::span<const std::byte> private_data) {
    return retry_connect(peer, patience, [&] {
        RcConnection c = RcConnection::resolve(peer, opts);
        c.connect(private_data);
        return c;
    });
}

namespace {
// Whether rdma_cm can bind `local`'s address on some free port.
bool address_binds(const Endpoint& local) {
    CmEventChannel events;
    CmId probe = create_id(events);
    const AddrInfo ai = lookup(Endpoint{local.host, 0}, true);
    return rdma_bind_addr(probe.get(), ai->ai_addr) == 0;
}
} // namespace

Listener::Listener(const Endpoint& local) : id_(create_id(events_)) {
    const AddrInfo ai = lookup(local, true);
    if (rdma_bind_addr(id_.get(), ai->ai_addr) != 0) {
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
    check_errno(rdma_listen(id_.get(), 8), "rdma_listen");
    if (id_->verbs != nullptr) { // bound to an address, so to its device
        device_ = ibv_get_device_name(id_->verbs->device);
    }
}

std::uint16_t Listener::port() const { return ntohs(rdma_get_src_port(id_.get())); }

void Listener::log_refusal(const std::string& peer, const std::string& reason) const {
    const std::string line = fmt::format("refused {}: {}", peer, reason);
    if (log_) {
        log_(line);
    } else {
        std::fprintf(stderr, "rdmastream: %s\n", line.c_str());
    }
}

namespace {
// "198.18.0.2:40123" for a request's id, before an RcConnection exists.
std::string request_peer(rdma_cm_id* id) {
    return fmt::format("{}:{}", address_text(rdma_get_peer_addr(id)), ntohs(rdma_get_dst_port(id)));
}

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

std::optional<RcConnection> Listener::screened(const CmEvent& req, const ConnectionOptions& opts,
                                               const Screen& screen) {
    CmId id(req.id); // the request's id is ours now: released on every path out of here
    const std::string peer = request_peer(id.get());
    if (!allow_.allows(rdma_get_peer_addr(id.get()))) {
        const std::string told =
            reject_with(id.get(), wire::RejectReason::kConfig, "this listener does not take connections from your address");
        log_refusal(peer, fmt::format("its address is not allowed (allowed: {}){}", allow_.describe(), told));
        return std::nullopt;
    }
    try {
        if (screen) screen(req.private_bytes(), peer);
        check_id_device(id.get(), opts.device, "the connection request");
    } catch (const PeerRefused& e) {
        log_refusal(peer, e.what() + reject_with(id.get(), e.reason(), e.what()));
        return std::nullopt;
    } catch (const ProtocolError& e) {
        log_refusal(peer, e.what() + reject_with(id.get(), wire::RejectReason::kProtocol, e.what()));
        return std::nullopt;
    } catch (const UserError& e) {
        log_refusal(peer, e.what() + reject_with(id.get(), wire::RejectReason::kConfig, e.what()));
        return std::nullopt;
    }
    CmEventChannel own;
    check_errno(rdma_migrate_id(id.get(), own.get()), "rdma_migrate_id");
    RcConnection c(std::move(own), std::move(id), opts);
    c.peer_data_ = req;
    try {
        c.create_resources();
    } catch (const SystemError& e) {
        // This peer's resources only: a request whose peer gave it up before
        // we got to it (rxe fails rdma_create_qp with EINVAL on such an id),
        // or a device out of QPs or memory for one more. The peer goes, with
        // all made for it; the listener serves the next.
        const std::string told =
            reject_with(c.id_.get(), wire::RejectReason::kResources, "the listener could not set up the connection");
        log_refusal(peer, fmt::format("could not set up its connection (or it gave its request up): {}{}", e.what(), told));
        return std::nullopt;
    }
    return c;
}

std::optional<CmEvent> Listener::next_event(std::chrono::milliseconds timeout) {
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
        throw ListenerError(fmt::format(
            "the RDMA device {} under the listener on port {} was removed (`rdma link delete`, driver unload or "
            "hot unplug; {}): bring the device back (`rdma link add`, see docs/softroce.md; `rdma link show` must "
            "list it) and start listening again",
            device_.empty() ? "(unknown)" : device_, port(), describe(ev)));
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
        if (auto c = screened(*ev, opts, screen)) {
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
        const std::optional<CmEvent> ev = next_event(left);
        if (!ev) {
            throw CmEventError(fmt::format("waiting for a peer: no {} within {} ms",
                                           rdma_event_str(RDMA_CM_EVENT_CONNECT_REQUEST), timeout.count()),
                               std::nullopt);
        }
        if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            not_a_request(*ev);
            continue;
        }
        if (auto c = screened(*ev, opts, screen)) {
            return std::move(*c);
        }
    }
}

bool Listener::complete(RcConnection& conn, std::span<const std::byte> private_data) const {
    try {
        conn.accept(private_data);
        return true;
    } catch (const CmEventError& e) {
        log_refusal(conn.peer_name(), fmt::format("it did not complete the handshake: {}", e.what()));
    } catch (const SystemError& e) {
        // rdma_accept on a request whose peer gave up already (EINVAL): the
        // CM dropped it under us.
        log_refusal(conn.peer_name(), fmt::format("it gave its connect request up: {}", e.what()));
    }
    return false;
}

std::size_t Listener::refuse_waiting(wire::RejectReason reason, const std::string& text) {
    std::size_t n = 0;
    while (auto ev = next_event(std::chrono::milliseconds(0))) {
        if (ev->type != RDMA_CM_EVENT_CONNECT_REQUEST) {
            not_a_request(*ev);
            continue;
        }
        CmId id(ev->id);
        const std::string peer = request_peer(id.get());
        log_refusal(peer, text + reject_with(id.get(), reason, text));
        ++n;
    }
    return n;
}

} // namespace rdmastream
