// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameSender set-up and shutdown, either direction: connect to a listening
// receiver, or accept a receiver that dials in (both the one way,
// stream/opening.hpp). The hellos travel in the
// rdma_cm private data; then the handshake (handshake.hpp: key proofs, the
// receiver's ring advert) runs over the connection before the FrameSender
// is made. The per-frame code is in frame_sender_datapath.cpp.
#include "stream/frame_sender.hpp"

#include "stream/opening.hpp"

#include "rdmastream/devices.hpp"
#include "rdmastream/error.hpp"
#include "wire/handshake.hpp"
#include "setup/refuse_on_error.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

namespace {
// The QP is made before the advert says how many slots the ring has, so it
// is sized for the largest ring a sender takes.
ConnectionOptions sender_queues(const SenderOptions& opts) {
    ConnectionOptions o;
    o.device = opts.device;
    o.shared_pd = opts.shared_pd;
    o.recv_wr = FrameSender::kMaxSlots;         // one credit per slot in flight
    o.send_wr = 2 * FrameSender::kMaxSlots + 4; // writes signalled every slots/2, one control message
    return o;
}

void check_slots(std::uint32_t slots) {
    if (slots > FrameSender::kMaxSlots) {
        throw UserError(fmt::format("the receiver offers {} slots, a sender takes at most {}: give the receiver "
                                    "fewer slots",
                                    slots, FrameSender::kMaxSlots));
    }
}

wire::RingAdvert checked_advert(const wire::RingAdvert& ring) {
    check_slots(ring.slot_count);
    if (ring.windows() && ring.slot_rkeys.size() != ring.slot_count) {
        throw std::invalid_argument("FrameSender: a ring advert with windows needs one key per slot");
    }
    if (ring.flow != 0 || ring.slot_base != 0) {
        throw ProtocolError(fmt::format("the receiver's first ring advert is for flow {} from slot {}: the first "
                                        "is flow 0's, from slot 0",
                                        ring.flow, ring.slot_base));
    }
    return ring;
}

} // namespace

OpeningPlan FrameSender::opening_plan(const SenderOptions& opts) {
    OpeningPlan p;
    p.role = wire::Role::kSender;
    p.peer_role = "receiver";
    p.slots = kMaxSlots;
    p.key = opts.key;
    p.poll_mode = opts.poll_mode;
    p.waker = opts.waker.get();
    p.queues = sender_queues(opts);
    p.check_slots = [](std::uint32_t slots) { check_slots(slots); };
    return p;
}

std::unique_ptr<FrameSender> FrameSender::connect(const Endpoint& receiver, const SenderOptions& opts,
                                                  std::chrono::milliseconds patience) {
    if (!opts.device.empty()) {
        check_device_exists(opts.device); // once; a passive side checks each request's device instead
    }
    std::optional<Opening> o = dial(receiver, patience, opening_plan(opts));
    if (!o) {
        return nullptr; // woken between two tries
    }
    return over(std::move(*o), opts);
}

std::unique_ptr<FrameSender> FrameSender::accept(Listener& listener, const SenderOptions& opts,
                                                 std::chrono::milliseconds timeout, const std::string& where) {
    // A receiver that fails the handshake (a wrong or missing key, a bad
    // message, silence) is logged by the listener and the next one served.
    std::optional<Opening> o =
        accept_next_peer(listener, std::chrono::steady_clock::now() + timeout, Handshake::kPatience,
                         opening_plan(opts), where.empty() ? fmt::format("port {}", listener.port()) : where);
    if (!o) {
        return nullptr; // woken
    }
    return over(std::move(*o), opts);
}

std::unique_ptr<FrameSender> FrameSender::over(Opening opening, const SenderOptions& opts) {
    const wire::RingAdvert ring = opening.handshake->ring();
    opening.handshake.reset(); // through: none of its work requests is left
    RcConnection& c = opening.path->connection();
    auto s = std::make_unique<FrameSender>(std::move(opening.path), ring, opts);
    s->conn_ = &c; // lives in s->path_
    return s;
}

FrameSender::FrameSender(std::unique_ptr<Datapath> path, const wire::RingAdvert& ring, const SenderOptions& opts)
    : opts_(opts),
      path_(std::move(path)),
      policy_(opts.policy == Policy::kLive || ring.live ? Policy::kLive : Policy::kLossless),
      flow_of_slot_(kMaxSlots, 0),
      // Sized for every flow's slots at once (the most a sender takes): a
      // flow's range comes mid-stream, and these may not move then.
      headers_(path_->register_memory(std::size_t{kMaxSlots} * wire::kSlotHeaderSize, IBV_ACCESS_LOCAL_WRITE)),
      control_out_(path_->register_memory(wire::kControlPayloadMax, 0)),
      slot_rkey_(kMaxSlots),
      last_post_in_slot_(kMaxSlots, 0),
      in_flight_(std::bit_ceil(kMaxSlots)),
      credits_in_(kMaxSlots),
      signal_every_(std::max<std::uint32_t>(
          1, std::min(ring.slot_count, opts_.caller_depth > 0 ? opts_.caller_depth : ring.slot_count) / 2)),
      next_signalled_(signal_every_ - 1) {
    open_flow(checked_advert(ring));
}

void FrameSender::open_flow(const wire::RingAdvert& ring) {
    Flow& f = flows_[ring.flow];
    const bool fresh = f.ring.slot_count == 0;
    f.ring = ring;
    f.credits = SenderCredits(ring.slot_count, ring.slot_base); // every slot free, generation 0
    for (std::uint32_t i = 0; i < ring.slot_count; ++i) {
        slot_rkey_[ring.slot_base + i] = ring.first_rkey(i);
    }
    if (!fresh) {
        return; // grown slots: the same numbers, their receives posted already
    }
    std::fill_n(flow_of_slot_.begin() + ring.slot_base, ring.slot_count, ring.flow);
    total_slots_ += ring.slot_count;
    // Credits only come back for frames written, so posting their receives
    // now, before the flow's first write, is early enough. Each credit
    // message carries at least one slot we do not hold, so a receive per
    // slot covers every message that can be in flight.
    f.control_in.emplace(path_->register_memory(std::size_t{ring.slot_count} * kControlInSize, IBV_ACCESS_LOCAL_WRITE));
    for (std::uint32_t i = 0; i < ring.slot_count; ++i) {
        post_credit_recv(ring.slot_base + i);
    }
}

bool FrameSender::all_credits_home() const noexcept {
    return std::all_of(flows_.begin(), flows_.end(), [](const Flow& f) { return f.credits.all_home(); });
}

FrameSender::~FrameSender() { stop(); }

void FrameSender::stop() noexcept {
    if (state_ == SenderState::kStopped) {
        return; // stopped by its owner already; the destructor stops again
    }
    step(state_, SenderState::kStopped); // every state may stop (stream_states.cpp): never throws
    // The NIC lets go of every payload (and of our headers and control
    // buffers) before the caller gets a frame back or any region goes.
    path_->stop();
    for (; retired_before_ < next_post_; ++retired_before_) {
        if (opts_.on_done) opts_.on_done(in_flight(retired_before_).cookie, FrameFate::kDropped);
    }
    for (Flow& f : flows_) {
        f.in_flight = 0;
        if (f.pending) {
            if (opts_.on_done) opts_.on_done(f.pending->cookie, FrameFate::kDropped);
            f.pending.reset();
        }
    }
}

void FrameSender::start_numbering_at(std::uint64_t first, std::uint8_t flow) {
    check_usable("start_numbering_at");
    if (flows_[flow].next_number != 0) {
        throw std::logic_error("start_numbering_at: frames of the flow were sent already");
    }
    flows_[flow].next_number = first;
}

std::span<std::byte> FrameSender::credit_buffer(std::uint64_t buffer) const noexcept {
    const Flow& f = flows_[flow_of_slot_[buffer]];
    return f.control_in->bytes().subspan((buffer - f.ring.slot_base) * kControlInSize, kControlInSize);
}

void FrameSender::post_credit_recv(std::uint64_t buffer) {
    const Flow& f = flows_[flow_of_slot_[buffer]];
    ibv_sge sge{f.control_in->addr() + (buffer - f.ring.slot_base) * kControlInSize,
                static_cast<std::uint32_t>(kControlInSize), f.control_in->lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = work_id(Work::kControlRecv, buffer);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    path_->post_recv(wr, "ibv_post_recv(credit)");
}

void FrameSender::set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) {
    check_usable("set_format");
    if (format.flow >= kMaxFlows) {
        throw std::invalid_argument(fmt::format("set_format: flow {} (flows 0..{})", format.flow, kMaxFlows - 1));
    }
    Flow& flow = flows_[format.flow];
    if (format.id == 0 || format.id == flow.format_id) {
        throw std::invalid_argument("set_format: a new format needs a new, non-zero id");
    }
    // Frames in the old format may stay held downstream (RC ordering puts
    // the format after them), unless the flow's slots grow: then the
    // receiver must hold nothing in them, so wait for the flow's credits.
    // Larger side data staging replaces the old, which writes in flight of
    // any flow may still read, and which holds every flow's pending frame's
    // side data: post those, and wait for every credit then.
    const bool grows = std::uint64_t{format.max_frame_size} + format.max_side_data > max_payload(format.flow);
    const bool side_grows = format.max_side_data > side_stride_;
    if (side_grows) {
        flush_pending(timeout);
    } else {
        flush_pending(format.flow, timeout); // the flow's pending frame belongs to its old format
    }
    auto deadline = Clock::now() + timeout;
    while (control_in_flight_ || (grows && !flow.credits.all_home()) || (side_grows && !all_credits_home())) {
        pump(deadline, timeout);
    }
    post_format(format);
    deadline = Clock::now() + timeout;
    while (state_ == SenderState::kFormatPosted) pump(deadline, timeout);
}

void FrameSender::begin_format(const wire::StreamFormat& format) {
    if (format.flow >= kMaxFlows || format.id == 0 || format.id == flows_[format.flow].format_id) {
        throw std::invalid_argument("begin_format: a new format needs a new, non-zero id, of a flow below 15");
    }
    check_usable("begin_format");
    if (next_post_ != 0 || flows_[format.flow].pending || control_in_flight_ || state_ != SenderState::kStreaming) {
        throw std::logic_error("begin_format: only before the first frame (use set_format)");
    }
    post_format(format);
}

bool FrameSender::format_settled() {
    check_usable("format_settled");
    pump_now(Clock::now());
    return state_ != SenderState::kFormatPosted;
}

void FrameSender::set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) {
    check_usable("set_clock");
    const auto deadline = Clock::now() + timeout;
    while (!try_post_clock(anchor)) pump(deadline, timeout);
}

bool FrameSender::try_post_clock(const ClockAnchor& anchor) {
    check_usable("set_clock");
    if (control_in_flight_) return false; // the one control_out_ buffer is in use
    const auto bytes = wire::encode(anchor);
    std::copy(bytes.begin(), bytes.end(), control_out_.bytes().begin());
    post_control(wire::Control::kClock, bytes.size());
    return true;
}

void FrameSender::post_format(const wire::StreamFormat& format) {
    const std::size_t size = wire::encode(format, control_out_.bytes().first<wire::kControlPayloadMax>());
    if (format.max_side_data > side_stride_) { // no write reads the old staging (set_format waited)
        // An entry per slot number a sender takes, and a pending one per flow.
        side_.reset();
        side_.emplace(path_->register_memory((std::size_t{kMaxSlots} + kMaxFlows) * format.max_side_data,
                                             IBV_ACCESS_LOCAL_WRITE));
        side_stride_ = format.max_side_data;
    }
    post_control(wire::Control::kFormat, size);
    const std::uint32_t room = format.max_frame_size + format.max_side_data; // bounded by the decoder's limit
    // A flow without slots grows too: the receiver answers its first format
    // with its ring advert.
    posted_format_ =
        PostedFormat{format.id, format.flow, room > max_payload(format.flow), room, format.max_side_data, false};
    step(state_, SenderState::kFormatPosted);
}

void FrameSender::settle_format() {
    if (state_ == SenderState::kFormatPosted && !control_in_flight_ &&
        (!posted_format_.grows || posted_format_.ring_adopted)) {
        flows_[posted_format_.flow].format_id = posted_format_.id;
        flows_[posted_format_.flow].max_side_data = posted_format_.max_side_data;
        step(state_, SenderState::kStreaming);
    }
}

void FrameSender::check_usable(const char* call) const {
    switch (state_) {
    case SenderState::kStreaming:
    case SenderState::kFormatPosted: return;
    case SenderState::kLeft:
        throw PeerLeft(fmt::format("the receiver {} left after {} frames: it has every frame it wants",
                                   path_->peer_name(), next_post_));
    case SenderState::kFailed:
        throw ConnectionError(fmt::format("sender: {}() after the stream to {} failed (the error thrown then "
                                          "said why)",
                                          call, path_->peer_name()));
    case SenderState::kEnding:
    case SenderState::kEnded:
    case SenderState::kStopped: break;
    }
    throw std::logic_error(fmt::format("sender: {}() in state \"{}\": the stream is over", call, name(state_)));
}

void FrameSender::mark_failed() noexcept {
    if (allowed(state_, SenderState::kFailed)) step(state_, SenderState::kFailed);
}

void FrameSender::adopt_ring(const wire::RingAdvert& ring) {
    // A flow's ring advert answers its format whose frames outgrow its
    // slots (or that is its first), once; any other is unsolicited.
    if (state_ != SenderState::kFormatPosted || !posted_format_.grows || posted_format_.ring_adopted) {
        throw ProtocolError("the receiver sent a ring advert the sender did not ask for (no format that outgrows "
                            "its flow's slots is waiting for one)");
    }
    if (ring.flow != posted_format_.flow) {
        throw ProtocolError(fmt::format("the receiver sent a ring advert for flow {}, while flow {}'s format waits "
                                        "for one",
                                        ring.flow, posted_format_.flow));
    }
    if (ring.slot_size - wire::kSlotHeaderSize < posted_format_.max_frame_size) {
        throw ProtocolError(fmt::format("the receiver's new slots for flow {} have {} bytes, too small for the "
                                        "{}-byte frames they are for",
                                        ring.flow, ring.slot_size, posted_format_.max_frame_size));
    }
    const Flow& flow = flows_[ring.flow];
    if (flow.ring.slot_count == 0) {
        // A new flow's range follows the others' (the receiver numbers
        // them in the order their flows came), within what we take.
        if (ring.slot_base != total_slots_ || total_slots_ + ring.slot_count > kMaxSlots) {
            throw ProtocolError(fmt::format("the receiver gave flow {} slots {}..{}: a new flow's slots follow the "
                                            "others' (from slot {}), at most {} in all",
                                            ring.flow, ring.slot_base, ring.slot_base + ring.slot_count - 1,
                                            total_slots_, kMaxSlots));
        }
        if (ring.windows() != flows_[0].ring.windows() || ring.live != flows_[0].ring.live) {
            throw ProtocolError(fmt::format("the receiver's slots for flow {} differ from flow 0's in memory "
                                            "windows or policy",
                                            ring.flow));
        }
    } else {
        if (ring.slot_count != flow.ring.slot_count || ring.slot_base != flow.ring.slot_base) {
            throw ProtocolError(fmt::format("the receiver's grown slots for flow {} are {} from slot {}, they were "
                                            "{} from slot {}: a flow's slots keep their count and numbers",
                                            ring.flow, ring.slot_count, ring.slot_base, flow.ring.slot_count,
                                            flow.ring.slot_base));
        }
        if (!flow.credits.all_home()) {
            throw ProtocolError(fmt::format("the receiver replaced flow {}'s slots while its frames were in flight",
                                            ring.flow));
        }
    }
    open_flow(ring);
    posted_format_.ring_adopted = true;
    settle_format(); // if our SEND's completion came first
}

void FrameSender::flush_pending(std::chrono::milliseconds timeout) {
    for (std::uint8_t f = 0; f < kMaxFlows; ++f) {
        flush_pending(f, timeout);
    }
}

void FrameSender::flush_pending(std::uint8_t flow, std::chrono::milliseconds timeout) {
    Flow& f = flows_[flow];
    if (f.pending) {
        const auto deadline = Clock::now() + timeout;
        while (f.credits.available() == 0) {
            pump(deadline, timeout);
        }
        post(flow, *f.pending, Clock::now()); // a refused post leaves it pending
        f.pending.reset();
    }
}

void FrameSender::finish(std::chrono::milliseconds timeout) {
    if (state_ == SenderState::kLeft) {
        return; // the receiver ended the stream: it has every frame it wants
    }
    check_usable("finish");
    flush_pending(timeout);
    // Every frame delivered (not necessarily released: a downstream sink may
    // keep the last one as long as it likes, the ring is the receiver's).
    // A format on its way is settled first (a grown ring adopted): the end
    // of stream follows it, as frames do.
    auto deadline = Clock::now() + timeout;
    while (retired_before_ < next_post_ || control_in_flight_ || state_ == SenderState::kFormatPosted) {
        pump(deadline, timeout);
    }
    // End of stream, then hang up once it is acknowledged: a disconnect
    // without it means the sender died.
    post_control(wire::Control::kEndOfStream);
    step(state_, SenderState::kEnding);
    deadline = Clock::now() + timeout;
    while (state_ == SenderState::kEnding) {
        pump(deadline, timeout);
    }
    path_->disconnect();
}

void FrameSender::post_control(wire::Control kind, std::size_t payload_size) {
    // The one control message in flight (so one control_out_ buffer).
    path_->post_control(kind, control_out_, payload_size, work_id(Work::kControlSend), "ibv_post_send(control)");
    control_in_flight_ = true;
    control_after_ = next_post_;
    last_post_time_ = std::chrono::steady_clock::now();
    control_posted_at_ = last_post_time_;
}

} // namespace rdmastream
