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
      ring_(checked_advert(ring)),
      policy_(opts.policy == Policy::kLive || ring_.live ? Policy::kLive : Policy::kLossless),
      headers_(path_->register_memory(std::size_t{ring_.slot_count} * wire::kSlotHeaderSize, IBV_ACCESS_LOCAL_WRITE)),
      control_in_size_(std::max(wire::ring_advert_size(ring_.slot_count, true),
                                std::size_t{ring_.slot_count} * wire::kCreditSize)),
      control_in_(path_->register_memory(std::size_t{ring_.slot_count} * control_in_size_, IBV_ACCESS_LOCAL_WRITE)),
      control_out_(path_->register_memory(wire::kControlPayloadMax, 0)),
      credits_(ring_.slot_count),
      slot_rkey_(ring_.slot_count),
      last_post_in_slot_(ring_.slot_count, 0),
      in_flight_(std::bit_ceil(ring_.slot_count)),
      credits_in_(ring_.slot_count),
      signal_every_(std::max<std::uint32_t>(
          1, std::min(ring_.slot_count, opts_.caller_depth > 0 ? opts_.caller_depth : ring_.slot_count) / 2)),
      next_signalled_(signal_every_ - 1) {
    // Credits only come back for frames written, so posting their receives
    // now, before the first write, is early enough. Each credit message
    // carries at least one slot we do not hold, so slot_count receives
    // cover every message that can be in flight.
    for (std::uint32_t i = 0; i < ring_.slot_count; ++i) {
        post_credit_recv(i);
        slot_rkey_[i] = ring_.first_rkey(i);
    }
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
    if (pending_) {
        if (opts_.on_done) opts_.on_done(pending_->cookie, FrameFate::kDropped);
        pending_.reset();
    }
}

void FrameSender::start_numbering_at(std::uint64_t first) {
    check_usable("start_numbering_at");
    if (next_number_ != 0) {
        throw std::logic_error("start_numbering_at: frames were sent already");
    }
    next_number_ = first;
}

void FrameSender::post_credit_recv(std::uint64_t buffer) {
    ibv_sge sge{control_in_.addr() + buffer * control_in_size_, static_cast<std::uint32_t>(control_in_size_),
                control_in_.lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = work_id(Work::kControlRecv, buffer);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    path_->post_recv(wr, "ibv_post_recv(credit)");
}

void FrameSender::set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) {
    check_usable("set_format");
    if (format.id == 0 || format.id == format_id_) {
        throw std::invalid_argument("set_format: a new format needs a new, non-zero id");
    }
    flush_pending(timeout); // the pending frame belongs to the old format
    // Frames in the old format may stay held downstream (RC ordering puts
    // the format after them), unless the ring grows: then the receiver must
    // hold nothing in the old ring, so wait for every credit.
    // Larger side data staging replaces the old, which writes in flight may
    // still read: wait for every credit then too.
    const bool grows = std::uint64_t{format.max_frame_size} + format.max_side_data > max_payload();
    const bool side_grows = format.max_side_data > side_stride_;
    auto deadline = Clock::now() + timeout;
    while (control_in_flight_ || ((grows || side_grows) && !credits_.all_home())) pump(deadline, timeout);
    post_format(format);
    deadline = Clock::now() + timeout;
    while (state_ == SenderState::kFormatPosted) pump(deadline, timeout);
}

void FrameSender::begin_format(const wire::StreamFormat& format) {
    if (format.id == 0 || format.id == format_id_) {
        throw std::invalid_argument("begin_format: a new format needs a new, non-zero id");
    }
    check_usable("begin_format");
    if (next_post_ != 0 || pending_ || control_in_flight_ || state_ != SenderState::kStreaming) {
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
        side_.reset();
        side_.emplace(path_->register_memory((std::size_t{ring_.slot_count} + 1) * format.max_side_data,
                                             IBV_ACCESS_LOCAL_WRITE));
        side_stride_ = format.max_side_data;
    }
    post_control(wire::Control::kFormat, size);
    const std::uint32_t room = format.max_frame_size + format.max_side_data; // bounded by the decoder's limit
    posted_format_ = PostedFormat{format.id, room > max_payload(), room, format.max_side_data, false};
    step(state_, SenderState::kFormatPosted);
}

void FrameSender::settle_format() {
    if (state_ == SenderState::kFormatPosted && !control_in_flight_ &&
        (!posted_format_.grows || posted_format_.ring_adopted)) {
        format_id_ = posted_format_.id;
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
    // A new ring answers a format whose frames outgrow the slots, once; any
    // other is unsolicited.
    if (state_ != SenderState::kFormatPosted || !posted_format_.grows || posted_format_.ring_adopted) {
        throw ProtocolError("the receiver sent a ring advert the sender did not ask for (no format that outgrows "
                            "the slots is waiting for one)");
    }
    if (ring.slot_size - wire::kSlotHeaderSize < posted_format_.max_frame_size) {
        throw ProtocolError(fmt::format("the receiver's new ring has {}-byte slots, too small for the {}-byte "
                                        "frames it grew for",
                                        ring.slot_size, posted_format_.max_frame_size));
    }
    if (ring.slot_count != ring_.slot_count) {
        throw ProtocolError(fmt::format("the receiver's new ring has {} slots, the old one {}: slot counts cannot "
                                        "change mid-stream",
                                        ring.slot_count, ring_.slot_count));
    }
    if (!credits_.all_home()) {
        throw ProtocolError("the receiver replaced its ring while frames were in flight");
    }
    ring_ = ring;
    credits_ = SenderCredits(ring.slot_count); // a fresh ring: every slot free, generation 0
    for (std::uint32_t i = 0; i < ring.slot_count; ++i) {
        slot_rkey_[i] = ring.first_rkey(i);
    }
    posted_format_.ring_adopted = true;
    settle_format(); // if our SEND's completion came first
}

void FrameSender::flush_pending(std::chrono::milliseconds timeout) {
    if (pending_) {
        const auto deadline = Clock::now() + timeout;
        while (credits_.available() == 0) {
            pump(deadline, timeout);
        }
        post(*pending_, Clock::now()); // a refused post leaves it pending
        pending_.reset();
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
