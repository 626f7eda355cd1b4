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

namespace {
ConnectionOptions receiver_queues(const RingConfig& ring) {
    ConnectionOptions o;
    o.device = ring.device;
    // One receive per write in flight (credits bound those to the slot
    // count) plus one for the end-of-stream message; during the handshake,
    // one for the sender's key proof.
    o.recv_wr = ring.slots + 1;
    // Unretired at once, at most: a window bind per slot (unsignalled, in
    // front of its credit) and an invalidate per slot (signalled, each
    // polled before the slot's next bind), the 8 credit messages in flight
    // (FrameReceiver::kCreditBuffers) and the ring advert.
    o.send_wr = 2 * ring.slots + 8 + 2;
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

// How a FrameReceiver opens its connection (stream/opening.hpp).
OpeningPlan receiver_plan(const RingConfig& ring) {
    OpeningPlan p;
    p.role = wire::Role::kReceiver;
    p.peer_role = "sender";
    p.slots = ring.slots;
    p.key = ring.key;
    p.poll_mode = ring.poll_mode;
    p.waker = ring.waker.get();
    p.queues = receiver_queues(ring);
    p.check_slots = [&ring](std::uint32_t sender_max_slots) { check_slots(sender_max_slots, ring); };
    return p;
}
} // namespace

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
                         receiver_plan(ring), where.empty() ? fmt::format("port {}", listener.port()) : where);
    if (!o) {
        return nullptr; // woken
    }
    o->handshake.reset(); // through: none of its work requests is left
    return over(std::move(o->path), ring);
}

std::unique_ptr<FrameReceiver> FrameReceiver::connect(const Endpoint& sender, const RingConfig& ring,
                                                      std::chrono::milliseconds patience) {
    check_config(ring);
    std::optional<Opening> o = dial(sender, patience, receiver_plan(ring));
    if (!o) {
        return nullptr; // woken between two tries
    }
    o->handshake.reset(); // through: none of its work requests is left
    return over(std::move(o->path), ring);
}

std::unique_ptr<FrameReceiver> FrameReceiver::over(std::unique_ptr<VerbsDatapath> path, const RingConfig& config) {
    RcConnection& c = path->connection();
    auto r = std::make_unique<FrameReceiver>(std::move(path), config);
    r->conn_ = &c; // lives in r->path_
    r->announce_ring();
    r->stats_ = StreamStats{};
    r->last_heard_ = std::chrono::steady_clock::now();
    return r;
}

FrameReceiver::FrameReceiver(std::unique_ptr<Datapath> path, const RingConfig& config)
    : config_(config),
      path_(std::move(path)),
      windows_(use_windows(*path_, config)),
      // Remote write and nothing more, with windows only through a slot's
      // window: the sender can write slots, never read this process's memory.
      ring_(path_->register_ring(config.slots, config.slot_size, windows_)),
      control_in_(path_->register_memory(std::size_t{config.slots + 1} * wire::kControlPayloadMax,
                                         IBV_ACCESS_LOCAL_WRITE)),
      control_out_(path_->register_memory(std::max(wire::kControlPayloadMax, wire::ring_advert_size(config.slots, true)),
                                          0)),
      credit_out_(path_->register_memory(kCreditBuffers * std::size_t{config.slots} * wire::kCreditSize, 0)),
      slots_(config.slots),
      last_heard_(std::chrono::steady_clock::now()),
      credit_batch_(config.slots),
      bind_batch_(config.slots),
      recv_batch_(config.slots),
      recv_sges_(config.slots),
      flush_at_(std::max<std::size_t>(1, config.slots / 4)),
      signal_every_(kCreditBuffers / 2),
      recv_of_slot_(config.slots, 0),
      arrived_(2 * std::size_t{config.slots} + 2),
      invalidated_(config.slots, 0),
      side_of_slot_(config.slots) {
    for (std::uint32_t i = 0; i <= config.slots; ++i) {
        post_recv(i);
    }
    bind_all();
}

void FrameReceiver::bind_all() {
    if (!windows_) {
        return;
    }
    for (std::uint16_t s = 0; s < config_.slots; ++s) {
        ibv_send_wr& b = bind_batch_[s];
        b = {};
        b.wr_id = work_id(Work::kBindWindow, s);
        credit_batch_[s].rkey = ring_->bind_request(s, b);
        b.next = s + 1u < config_.slots ? &bind_batch_[s + 1u] : nullptr;
    }
    path_->post_send(bind_batch_.front(), "ibv_post_send(IBV_WR_BIND_MW)");
    for (std::uint16_t s = 0; s < config_.slots; ++s) {
        ring_->bound(s, credit_batch_[s].rkey);
    }
}

wire::RingAdvert FrameReceiver::ring_advert() const {
    wire::RingAdvert a{config_.slots, config_.slot_size, ring_->addr(), ring_->ring_rkey(), config_.live, {}};
    if (windows_) {
        a.slot_rkeys.resize(config_.slots);
        for (std::uint32_t s = 0; s < config_.slots; ++s) {
            a.slot_rkeys[s] = ring_->rkey(s);
        }
    }
    return a;
}

// Posted after bind_all()'s binds on the same send queue, so it reaches the
// sender after they took effect (see flush_credits).
void FrameReceiver::announce_ring() {
    path_->post_control(wire::Control::kRing, control_out_, wire::encode(ring_advert(), control_out_.bytes()),
                        work_id(Work::kControlSend), "ibv_post_send(ring advert)");
}

FrameReceiver::~FrameReceiver() {
    path_->disconnect();
    path_->stop();
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
// the sender asked, the receiver decides. Returns the slot size the frames
// need (the current one when they fit). Throws UserError naming the limit
// and how to raise it.
std::uint32_t slot_size_for(const wire::StreamFormat& f, const RingConfig& config, const std::string& sender) {
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
    const std::uint32_t room = config.slot_size - static_cast<std::uint32_t>(wire::kSlotHeaderSize);
    if (need <= room) {
        return config.slot_size;
    }
    const std::uint32_t slot_size = (need + static_cast<std::uint32_t>(wire::kSlotHeaderSize) + 4095u) / 4096u * 4096u;
    const std::uint64_t ring = std::uint64_t{config.slots} * slot_size;
    if (ring > config.max_ring_bytes) {
        throw UserError(fmt::format("the sender at {} announced stream format {} with frames of up to {} bytes: "
                                    "the ring would grow to {} slots of {} bytes ({} bytes), above this receiver's "
                                    "ring limit of {} bytes: raise it (rdmarecv --max-ring-bytes, rdmasrc "
                                    "max-ring-bytes) if the sender is trusted, or use fewer slots",
                                    sender, f.id, f.max_frame_size, config.slots, slot_size, ring,
                                    config.max_ring_bytes));
    }
    return slot_size;
}
} // namespace

void FrameReceiver::take_clock(std::uint64_t buffer, std::uint32_t length) {
    clock_ = wire::decode_clock(control_in_.bytes().subspan(buffer * wire::kControlPayloadMax, length));
    post_recv(buffer); // decoded: the buffer is free again
}

void FrameReceiver::take_format(std::uint64_t buffer, std::uint32_t length) {
    const auto bytes = control_in_.bytes().subspan(buffer * wire::kControlPayloadMax, length);
    wire::StreamFormat f = wire::decode_stream_format(bytes);
    if (format_ && f.id == format_->id) {
        throw ProtocolError(fmt::format("the sender announced format {} again: a new format needs a new id", f.id));
    }
    post_recv(buffer); // decoded: the buffer is free again
    const std::uint32_t slot_size = slot_size_for(f, config_, path_->peer_name());
    if (slot_size != config_.slot_size) {
        for (std::uint16_t s = 0; s < config_.slots; ++s) {
            if (slots_.held(s)) {
                throw ProtocolError("the sender grew the frames while frames were still held: a sender must wait "
                                    "for every credit before the ring can grow");
            }
        }
        // Grow the ring. Nothing is held (checked above), so the old ring
        // can go before the new one is registered: no moment with both.
        // Pinning a large ring takes seconds (about 2.5 s per GiB on rxe)
        // during which this thread serves nothing; the sender knows it
        // waits for a grown ring and sends no keepalive meanwhile (see
        // FrameSender::keepalive_if_idle), so none meets a missing receive.
        // The old ring's windows are all bound (every credit is out), and
        // go with it: deallocating a bound window unbinds it.
        check_memlock(std::size_t{config_.slots} * slot_size);
        ring_.reset();
        ring_ = path_->register_ring(config_.slots, slot_size, windows_);
        config_.slot_size = slot_size;
        slots_ = ReceiverSlots(config_.slots);
        bind_all();
        announce_ring();
        // The registration's time was ours, not the sender's silence.
        last_heard_ = std::chrono::steady_clock::now();
    }
    format_ = std::move(f);
    format_changed_ = true;
}

} // namespace rdmastream
