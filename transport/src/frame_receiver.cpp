// FrameReceiver set-up, either direction: accept a sender that dials in, or
// connect to a listening sender. The ring is registered before the
// connection is made, since its advert travels in the rdma_cm private data.
// The per-frame code is in frame_receiver_datapath.cpp.
#include "rdmastream/frame_receiver.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream {

namespace {
ConnectionOptions receiver_queues(const RingConfig& ring) {
    ConnectionOptions o;
    // One receive per write in flight (credits bound those to the slot
    // count) plus one for the end-of-stream message.
    o.recv_wr = ring.slots + 1;
    o.send_wr = 2 * ring.slots + 2; // credit SENDs, signalled every slots/2
    return o;
}

void check_config(const RingConfig& ring) {
    if (ring.slots == 0 || ring.slots > wire::kMaxSlots || ring.slot_size <= wire::kSlotHeaderSize) {
        throw UserError(fmt::format("a ring needs 1..{} slots of more than {} bytes each", wire::kMaxSlots,
                                    wire::kSlotHeaderSize));
    }
    check_memlock(std::size_t{ring.slots} * ring.slot_size);
}

// The sender's hello, checked against this ring. Throws ProtocolError or UserError.
void check_hello(const RcConnection& conn, const RingConfig& ring) {
    const wire::SenderHello hello = wire::decode_sender_hello(conn.peer_private_data());
    if (ring.slots > hello.max_slots) {
        throw UserError(fmt::format("the receiver's ring has {} slots, the sender takes at most {}: start the "
                                    "receiver with fewer slots",
                                    ring.slots, hello.max_slots));
    }
}
} // namespace

std::unique_ptr<FrameReceiver> FrameReceiver::accept(Listener& listener, const RingConfig& ring,
                                                     std::chrono::milliseconds timeout) {
    check_config(ring);
    RcConnection conn = listener.wait_request(receiver_queues(ring), timeout);
    // Refuse with a reason the sender can print, rather than let it time out.
    try {
        check_hello(conn, ring);
    } catch (const ProtocolError& e) {
        conn.reject(wire::encode(wire::Reject{wire::RejectReason::kProtocol, e.what()}));
        throw;
    } catch (const UserError& e) {
        conn.reject(wire::encode(wire::Reject{wire::RejectReason::kConfig, e.what()}));
        throw;
    }
    auto r = std::make_unique<FrameReceiver>(std::move(conn), ring);
    r->conn_.accept(r->advert());
    r->stats_ = StreamStats{};
    return r;
}

std::unique_ptr<FrameReceiver> FrameReceiver::connect(const Endpoint& sender, const RingConfig& ring,
                                                      std::chrono::milliseconds patience) {
    check_config(ring);
    auto r = retry_connect(sender, patience, [&] {
        auto fresh = std::make_unique<FrameReceiver>(RcConnection::resolve(sender, receiver_queues(ring)), ring);
        fresh->conn_.connect(fresh->advert());
        return fresh;
    });
    try {
        check_hello(r->conn_, ring);
    } catch (const std::exception&) {
        r->conn_.disconnect(); // too late to reject: the sender sees a disconnect
        throw;
    }
    r->stats_ = StreamStats{};
    return r;
}

FrameReceiver::FrameReceiver(RcConnection conn, const RingConfig& config)
    : config_(config),
      conn_(std::move(conn)),
      // LOCAL_WRITE | REMOTE_WRITE and nothing more: the sender can write
      // slots, never read this process's memory.
      ring_(conn_.pd(), std::size_t{config.slots} * config.slot_size,
            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
      poller_(conn_),
      slots_(config.slots),
      signal_every_(std::max<std::uint32_t>(1, config.slots / 2)) {
    for (std::uint32_t i = 0; i <= config.slots; ++i) {
        post_recv(i);
    }
}

wire::RingAdvertBytes FrameReceiver::advert() const {
    return wire::encode(wire::RingAdvert{config_.slots, config_.slot_size, ring_.addr(), ring_.rkey()});
}

void FrameReceiver::post_recv(std::uint64_t wr_id) {
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = wr_id; // no SGE: a WRITE_WITH_IMM and a credit carry no receive payload
    check_rc(ibv_post_recv(conn_.qp(), &wr, &bad), "ibv_post_recv");
}

} // namespace rdmastream
