// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameReceiver set-up, either direction: accept a sender that dials in, or
// connect to a listening sender (both the one way, stream/opening.hpp). The hellos travel in the rdma_cm private
// data; then the handshake (handshake.hpp) checks the sender's key proof,
// and only then is the ring registered and its advert sent.
// The per-frame code is in frame_receiver_datapath.cpp.
#include "stream/frame_receiver.hpp"

#include "stream/opening.hpp"

#include "rdmastream/devices.hpp"
#include "rdmastream/error.hpp"
#include "wire/handshake.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace rdmastream {

std::uint32_t slot_capacity(const RingConfig& config) noexcept {
    const std::uint64_t all =
        std::uint64_t{config.slots} + std::uint64_t{config.max_flows > 0 ? config.max_flows - 1 : 0} * config.flow_slots;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(all, wire::kMaxSlots));
}

namespace {
ConnectionOptions receiver_queues(const RingConfig& ring) {
    ConnectionOptions o;
    o.device = ring.device;
    // One receive per write in flight (credits bound those to the slot
    // count, every flow's) plus one for the end-of-stream message; during
    // the handshake, one for the sender's key proof.
    const std::uint32_t slots = slot_capacity(ring);
    o.recv_wr = slots + 1;
    // Unretired at once, at most: a window bind per slot (unsignalled, in
    // front of its credit) and an invalidate per slot (signalled, each
    // polled before the slot's next bind), the 8 credit messages in flight
    // (FrameReceiver::kCreditBuffers) and a ring advert.
    o.send_wr = 2 * slots + 8 + 2;
    return o;
}

// Windows if asked for and the device has them; else the warning, once.
bool use_windows(const Datapath& path, const RingConfig& config) {
    if (!config.memory_windows) {
        return false;
    }
    if (path.has_memory_windows()) {
        return true;
    }
    const std::string text = fmt::format(
        "rdmastream: warning: RDMA device {} has no type 2 memory windows: the ring is one REMOTE_WRITE region, as "
        "with rdmarecv --no-memory-windows or rdmasrc memory-windows=false, so a sender could write into a frame "
        "the consumer still holds",
        path.device_name());
    if (config.warn) {
        config.warn(text);
    } else {
        std::fprintf(stderr, "%s\n", text.c_str());
    }
    return false;
}

void check_config(const RingConfig& ring) {
    if (ring.slots == 0 || ring.slots > wire::kMaxSlots || ring.slot_size <= wire::kSlotHeaderSize) {
        throw UserError(fmt::format("a ring needs 1..{} slots of more than {} bytes each", wire::kMaxSlots,
                                    wire::kSlotHeaderSize));
    }
    if (ring.max_flows == 0 || ring.max_flows > kMaxFlows || ring.flow_slots == 0 ||
        ring.flow_slots > wire::kMaxSlots) {
        throw UserError(fmt::format("a receiver takes 1..{} flows, each after the first with 1..{} slots (asked: {} "
                                    "flows of {} slots)",
                                    kMaxFlows, wire::kMaxSlots, ring.max_flows, ring.flow_slots));
    }
    const std::uint64_t bytes = std::uint64_t{ring.slots} * ring.slot_size;
    if (ring.max_frame_bytes == 0 || bytes > ring.max_ring_bytes) {
        throw UserError(fmt::format("a ring of {} slots of {} bytes ({} bytes) does not fit the ring limit of {} "
                                    "bytes (frames up to {} bytes): use fewer or smaller slots, or raise the limit "
                                    "(rdmarecv --max-ring-bytes, rdmasrc max-ring-bytes)",
                                    ring.slots, ring.slot_size, bytes, ring.max_ring_bytes, ring.max_frame_bytes));
    }
    if (!ring.device.empty()) {
        check_device_exists(ring.device);
    }
    check_memlock(std::size_t{ring.slots} * ring.slot_size);
}

// The sender's largest ring against this one. Throws UserError.
void check_slots(std::uint32_t sender_max_slots, const RingConfig& ring) {
    if (ring.slots > sender_max_slots) {
        throw UserError(fmt::format("the receiver's ring has {} slots, the sender takes at most {}: start the "
                                    "receiver with fewer slots",
                                    ring.slots, sender_max_slots));
    }
}

} // namespace

// How a FrameReceiver opens its connection (stream/opening.hpp).
OpeningPlan FrameReceiver::opening_plan(const RingConfig& ring) {
    OpeningPlan p;
    p.role = wire::Role::kReceiver;
    p.peer_role = "sender";
    p.slots = ring.slots;
    p.key = ring.key;
    p.poll_mode = ring.poll_mode;
    p.waker = ring.waker.get();
    p.queues = receiver_queues(ring);
    p.check_slots = [ring](std::uint32_t sender_max_slots) { check_slots(sender_max_slots, ring); };
    return p;
}

std::unique_ptr<FrameReceiver> FrameReceiver::over(Opening opening, const RingConfig& ring) {
    const std::uint32_t sender_max_slots = opening.handshake->peer_slots();
    opening.handshake.reset(); // through: none of its work requests is left
    return over(std::move(opening.path), ring, sender_max_slots);
}

std::unique_ptr<FrameReceiver> FrameReceiver::accept(Listener& listener, const RingConfig& ring,
                                                     std::chrono::milliseconds timeout, const std::string& where) {
    check_config(ring);
    // A bad hello (a wrong or missing key flag included) is refused before
    // anything is made for it; a peer that then fails its handshake (a key
    // that does not match, silence) is logged, costs only its own
    // connection, and the next one is served. The ring is registered only
    // for a sender through its handshake.
    std::optional<Opening> o =
        accept_next_peer(listener, std::chrono::steady_clock::now() + timeout, ring.handshake_timeout,
                         opening_plan(ring), where.empty() ? fmt::format("port {}", listener.port()) : where);
    if (!o) {
        return nullptr; // woken
    }
    const std::uint32_t sender_max_slots = o->handshake->peer_slots();
    o->handshake.reset(); // through: none of its work requests is left
    return over(std::move(o->path), ring, sender_max_slots);
}

std::unique_ptr<FrameReceiver> FrameReceiver::connect(const Endpoint& sender, const RingConfig& ring,
                                                      std::chrono::milliseconds patience) {
    check_config(ring);
    std::optional<Opening> o = dial(sender, patience, opening_plan(ring));
    if (!o) {
        return nullptr; // woken between two tries
    }
    const std::uint32_t sender_max_slots = o->handshake->peer_slots();
    o->handshake.reset(); // through: none of its work requests is left
    return over(std::move(o->path), ring, sender_max_slots);
}

std::unique_ptr<FrameReceiver> FrameReceiver::over(std::unique_ptr<VerbsDatapath> path, const RingConfig& config,
                                                   std::uint32_t sender_max_slots) {
    RcConnection& c = path->connection();
    auto r = std::make_unique<FrameReceiver>(std::move(path), config, sender_max_slots);
    r->conn_ = &c; // lives in r->path_
    r->announce_ring();
    r->stats_ = StreamStats{};
    r->last_heard_ = std::chrono::steady_clock::now();
    return r;
}

FrameReceiver::FrameReceiver(std::unique_ptr<Datapath> path, const RingConfig& config,
                             std::uint32_t sender_max_slots)
    : config_(config),
      path_(std::move(path)),
      windows_(use_windows(*path_, config)),
      // Every flow's slots fit the sender's queues (its hello's largest ring)
      // and this config; flow 0's at least (check_slots refused less).
      capacity_(std::max(config.slots, std::min(slot_capacity(config), sender_max_slots))),
      flow_of_slot_(capacity_, 0),
      control_in_(path_->register_memory(std::size_t{capacity_ + 1} * wire::kControlPayloadMax,
                                         IBV_ACCESS_LOCAL_WRITE)),
      control_out_(path_->register_memory(std::max(wire::kControlPayloadMax, wire::ring_advert_size(capacity_, true)),
                                          0)),
      credit_out_(path_->register_memory(kCreditBuffers * std::size_t{capacity_} * wire::kCreditSize, 0)),
      slots_(0, capacity_),
      last_heard_(std::chrono::steady_clock::now()),
      credit_batch_(capacity_),
      bind_batch_(capacity_),
      recv_batch_(capacity_),
      recv_sges_(capacity_),
      flush_at_(std::max<std::size_t>(1, config.slots / 4)),
      signal_every_(kCreditBuffers / 2),
      recv_of_slot_(capacity_, 0),
      arrived_(2 * std::size_t{capacity_} + 2),
      invalidated_(capacity_, 0),
      side_of_slot_(capacity_) {
    post_recv(0); // the end of stream's (or a control message's) beyond one per slot
    // Remote write and nothing more, with windows only through a slot's
    // window: the sender can write slots, never read this process's memory.
    register_flow(0, config.slots, config.slot_size);
}

void FrameReceiver::register_flow(std::uint8_t flow, std::uint32_t count, std::uint32_t slot_size) {
    Flow& f = flows_[flow];
    const bool fresh = f.ring == nullptr;
    // A flow's slots that grow: nothing of theirs is held (take_format
    // checked), so the old ones can go before the new are registered: no
    // moment with both. Their windows are all bound (every credit is out),
    // and go with them: deallocating a bound window unbinds it.
    f.ring.reset();
    f.ring = path_->register_ring(count, slot_size, windows_);
    if (fresh) {
        f.base = total_slots_;
        std::fill_n(flow_of_slot_.begin() + f.base, count, flow);
        // A receive per new slot (one per write in flight): buffers
        // total_slots_+1.. (buffer 0 is the one beyond the slots).
        for (std::uint32_t i = 1; i <= count; ++i) {
            post_recv(total_slots_ + i);
        }
        total_slots_ += count;
        flush_at_ = std::max<std::size_t>(1, total_slots_ / 4);
    }
    slots_.reset(f.base, count);
    bind_all(flow);
}

void FrameReceiver::bind_all(std::uint8_t flow) {
    if (!windows_) {
        return;
    }
    const Flow& f = flows_[flow];
    const std::uint32_t count = f.ring->slot_count();
    for (std::uint32_t s = 0; s < count; ++s) {
        ibv_send_wr& b = bind_batch_[s];
        b = {};
        b.wr_id = work_id(Work::kBindWindow, f.base + s);
        credit_batch_[s].rkey = f.ring->bind_request(s, b);
        b.next = s + 1u < count ? &bind_batch_[s + 1u] : nullptr;
    }
    path_->post_send(bind_batch_.front(), "ibv_post_send(IBV_WR_BIND_MW)");
    for (std::uint32_t s = 0; s < count; ++s) {
        f.ring->bound(s, credit_batch_[s].rkey);
    }
}

wire::RingAdvert FrameReceiver::ring_advert(std::uint8_t flow) const {
    const Flow& f = flows_[flow];
    const SlotRing& ring = *f.ring;
    wire::RingAdvert a{ring.slot_count(), ring.slot_size(), ring.addr(), ring.ring_rkey(), config_.live, {}};
    a.flow = flow;
    a.slot_base = static_cast<std::uint16_t>(f.base);
    if (windows_) {
        a.slot_rkeys.resize(ring.slot_count());
        for (std::uint32_t s = 0; s < ring.slot_count(); ++s) {
            a.slot_rkeys[s] = ring.rkey(s);
        }
    }
    return a;
}

// Posted after bind_all()'s binds on the same send queue, so it reaches the
// sender after they took effect (see flush_credits).
void FrameReceiver::announce_ring(std::uint8_t flow) {
    path_->post_control(wire::Control::kRing, control_out_, wire::encode(ring_advert(flow), control_out_.bytes()),
                        work_id(Work::kControlSend), "ibv_post_send(ring advert)");
}

FrameReceiver::~FrameReceiver() {
    linger_for_hang_up();
    path_->disconnect();
    path_->stop();
}

void FrameReceiver::linger_for_hang_up() noexcept {
    if (!end_arrived() || sender_hung_up_) return;
    try {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        for (;;) {
            // Completions now are acks of our credits or flushes: nothing to act on.
            const Waited w = path_->wait(wcs_, deadline);
            if (w.kind != Waited::kCompletions) return; // the hang-up (or any event), a wake, the deadline
        }
    } catch (const std::exception&) {
        // The connection failed already: nobody is left to answer.
    }
}

void FrameReceiver::leave() noexcept {
    if (state_ == ReceiverState::kFailed || state_ == ReceiverState::kLeft) {
        path_->disconnect(); // nobody to tell, or told already
        return;
    }
    step(state_, ReceiverState::kLeft); // from any state but those above; releases send no credits now
    try {
        path_->post_control(wire::Control::kLeaving, control_out_, 0, work_id(Work::kLeavingSend),
                            "ibv_post_send(leaving)");
        // Hanging up at once could flush the message unsent; its ack means
        // it is in the sender's queue, ahead of the hang-up.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        for (bool acked = false; !acked;) {
            const Waited w = path_->wait(wcs_, deadline);
            if (w.kind == Waited::kTimeout || w.kind == Waited::kCmEvent) break; // the sender went first
            for (std::size_t i = 0; i < w.completions; ++i) acked = acked || wcs_[i].wr_id == work_id(Work::kLeavingSend);
        }
    } catch (const std::exception&) {
        // Nobody to tell: the connection failed already.
    }
    path_->disconnect();
}

void FrameReceiver::post_recv(std::uint64_t buffer) {
    // A frame's WRITE_WITH_IMM consumes a receive without touching its
    // buffer; a control message lands in it. wr_id names the buffer.
    ibv_sge sge{control_in_.addr() + buffer * wire::kControlPayloadMax,
                static_cast<std::uint32_t>(wire::kControlPayloadMax), control_in_.lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = work_id(Work::kControlRecv, buffer);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    path_->post_recv(wr, "ibv_post_recv");
}

namespace {
// A stream format's frames against this receiver's limits (RingConfig):
// the sender asked, the receiver decides. `slots`, `slot_size`: the flow's
// now (0, 0 for a flow without slots yet); `other_bytes`: every other
// flow's slots. Returns the slot size the frames need (the current one when
// they fit). Throws UserError naming the limit and how to raise it.
std::uint32_t slot_size_for(const wire::StreamFormat& f, const RingConfig& config, std::uint32_t slots,
                            std::uint32_t slot_size, std::uint64_t other_bytes, const std::string& sender) {
    if (f.max_frame_size > config.max_frame_bytes) {
        throw UserError(fmt::format("the sender at {} announced stream format {} with frames of up to {} bytes "
                                    "({:.1f} MiB), above this receiver's limit of {} bytes per frame: raise it "
                                    "(rdmarecv --max-frame-bytes, rdmasrc max-frame-bytes) if the sender is "
                                    "trusted, or have it send smaller frames",
                                    sender, f.id, f.max_frame_size, f.max_frame_size / 1048576.0,
                                    config.max_frame_bytes));
    }
    // A frame's payload and its side data share the slot behind the header.
    // decode_stream_format bounds the two to 2^30 - 64: no overflow.
    const std::uint32_t need = f.max_frame_size + f.max_side_data;
    if (slot_size > wire::kSlotHeaderSize && need <= slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize)) {
        return slot_size;
    }
    const std::uint32_t grown = (need + static_cast<std::uint32_t>(wire::kSlotHeaderSize) + 4095u) / 4096u * 4096u;
    const std::uint64_t ring = other_bytes + std::uint64_t{slots} * grown;
    if (ring > config.max_ring_bytes) {
        throw UserError(fmt::format("the sender at {} announced stream format {} (flow {}) with frames of up to {} "
                                    "bytes: its {} slots of {} bytes would bring the ring, every flow's slots "
                                    "together, to {} bytes, above this receiver's ring limit of {} bytes: raise it "
                                    "(rdmarecv --max-ring-bytes, rdmasrc max-ring-bytes) if the sender is trusted, "
                                    "or use fewer slots",
                                    sender, f.id, f.flow, f.max_frame_size, slots, grown, ring,
                                    config.max_ring_bytes));
    }
    return grown;
}
} // namespace

std::uint64_t FrameReceiver::ring_bytes_but(std::uint8_t flow) const noexcept {
    std::uint64_t bytes = 0;
    for (std::size_t i = 0; i < flows_.size(); ++i) {
        if (i != flow && flows_[i].ring != nullptr) {
            bytes += std::uint64_t{flows_[i].ring->slot_count()} * flows_[i].ring->slot_size();
        }
    }
    return bytes;
}

void FrameReceiver::take_clock(std::uint64_t buffer, std::uint32_t length) {
    clock_ = wire::decode_clock(control_in_.bytes().subspan(buffer * wire::kControlPayloadMax, length));
    post_recv(buffer); // decoded: the buffer is free again
}

void FrameReceiver::take_format(std::uint64_t buffer, std::uint32_t length) {
    const auto bytes = control_in_.bytes().subspan(buffer * wire::kControlPayloadMax, length);
    wire::StreamFormat f = wire::decode_stream_format(bytes);
    Flow& flow = flows_[f.flow]; // decode_stream_format bounds f.flow by kMaxFlows
    if (flow.format && f.id == flow.format->id) {
        throw ProtocolError(fmt::format("the sender announced format {} of flow {} again: a new format needs a new "
                                        "id",
                                        f.id, f.flow));
    }
    post_recv(buffer); // decoded: the buffer is free again
    if (flow.ring == nullptr) {
        add_flow(f);
    } else if (const std::uint32_t slot_size =
                   slot_size_for(f, config_, flow.ring->slot_count(), flow.ring->slot_size(), ring_bytes_but(f.flow),
                                 path_->peer_name());
               slot_size != flow.ring->slot_size()) {
        // Grow the flow's slots. Pinning a large ring takes seconds (about
        // 2.5 s per GiB on rxe) during which this thread serves nothing; the
        // sender knows it waits for a grown ring and sends no keepalive
        // meanwhile (see FrameSender::keepalive_if_idle), so none meets a
        // missing receive. Other flows' frames wait behind it (the sender
        // waits for this flow's credits only, not theirs).
        const std::uint32_t count = flow.ring->slot_count();
        for (std::uint32_t s = flow.base; s < flow.base + count; ++s) {
            if (slots_.held(static_cast<std::uint16_t>(s))) {
                throw ProtocolError(fmt::format("the sender grew flow {}'s frames while its frames were still "
                                                "held: a sender must wait for every credit of the flow before its "
                                                "slots can grow",
                                                f.flow));
            }
        }
        check_memlock(ring_bytes_but(f.flow) + std::size_t{count} * slot_size);
        register_flow(f.flow, count, slot_size);
        if (f.flow == 0) {
            config_.slot_size = slot_size;
        }
        announce_ring(f.flow);
        // The registration's time was ours, not the sender's silence.
        last_heard_ = std::chrono::steady_clock::now();
    }
    flow.format = std::move(f);
    flow.format_changed = true;
}

void FrameReceiver::add_flow(const wire::StreamFormat& f) {
    const std::string sender = path_->peer_name();
    if (f.flow >= config_.max_flows) {
        throw UserError(fmt::format("the sender at {} announced flow {} (stream format {}): this receiver takes "
                                    "flows 0..{}: raise its flow limit (ReceiverConfig::max_flows; rdmarecv and "
                                    "rdmasrc take flow 0 only so far) or have the sender send fewer",
                                    sender, f.flow, f.id, config_.max_flows - 1));
    }
    const std::uint32_t count = config_.flow_slots;
    if (std::uint64_t{total_slots_} + count > capacity_) {
        throw UserError(fmt::format("the sender at {} announced flow {}: its {} slots would make {} in all, more "
                                    "than the {} this connection takes (the sender's largest ring, or this "
                                    "receiver's slots and flow limits)",
                                    sender, f.flow, count, total_slots_ + count, capacity_));
    }
    const std::uint32_t slot_size = slot_size_for(f, config_, count, 0, ring_bytes_but(f.flow), sender);
    check_memlock(ring_bytes_but(f.flow) + std::size_t{count} * slot_size);
    register_flow(f.flow, count, slot_size);
    announce_ring(f.flow);
    last_heard_ = std::chrono::steady_clock::now(); // the registration's time was ours
}

} // namespace rdmastream
