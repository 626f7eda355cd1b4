// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameReceiver per-frame path: one batched CQ poll per up to 16 frames; no
// allocation, no copy. Syscalls: none while completions are queued (busy
// mode: none at all); in event mode one poll(2) per sleep, one read(2) when
// the CQ woke it, and a re-arm (a write(2) on rxe, a doorbell on a NIC) per
// sleep. Credits go out coalesced: one SEND and one ibv_post_recv list per
// look at the CQ, not per frame. With memory windows, a frame costs one
// more ibv_post_send (its invalidate, signalled: the frame is handed out
// when that completes, which the same CQ wait reports) and a bind work
// request in the credits' post.
#include "rdmastream/error.hpp"
#include "stream/frame_receiver.hpp"
#include "wire/side_data_wire.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <utility>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

std::optional<ReceivedFrame> FrameReceiver::next(std::chrono::milliseconds idle) {
    for (;;) {
        Arrival a = wait_frame(idle);
        if (a.kind == Arrival::kFrame) return std::move(a.frame);
        if (a.kind == Arrival::kEnd) return std::nullopt;
    }
}

FrameReceiver::Arrival FrameReceiver::wait_frame(std::chrono::milliseconds idle) {
    if (state_ == ReceiverState::kFailed) {
        throw ConnectionError(fmt::format("receiver: wait_frame() after the stream from {} failed (the error "
                                          "thrown then said why)",
                                          path_->peer_name()));
    }
    if (state_ == ReceiverState::kLeft) {
        throw std::logic_error("receiver: wait_frame() after leave()");
    }
    for (;;) {
        if (std::optional<Arrival> a = take()) return std::move(*a);
        const Waited w = path_->wait(completions(), silent_at(idle));
        if (w.kind == Waited::kWoken) return {Arrival::kWoken, {}};
        if (w.kind == Waited::kTimeout) silent(idle);
        waited(w);
    }
}

std::optional<FrameReceiver::Arrival> FrameReceiver::take() {
    for (;;) {
        if (std::optional<ReceivedFrame> f = checked_next_arrived()) {
            return Arrival{Arrival::kFrame, std::move(*f)};
        }
        if (state_ == ReceiverState::kEnded) {
            return Arrival{Arrival::kEnd, {}};
        }
        if (wc_next_ == wc_count_) break;
        checked_on_completion(wcs_[wc_next_++]);
    }
    // Going to the CQ: the credits released since the last look go first,
    // so the sender never waits on a credit we sit on.
    flush_credits();
    return std::nullopt;
}

std::span<ibv_wc> FrameReceiver::completions() noexcept {
    wc_next_ = 0;
    wc_count_ = 0;
    return wcs_;
}

Clock::time_point FrameReceiver::silent_at(std::chrono::milliseconds idle) const noexcept {
    const bool probation = stats_.frames == 0 && first_frame_by_ < last_heard_ + idle;
    return probation ? first_frame_by_ : last_heard_ + idle;
}

void FrameReceiver::silent(std::chrono::milliseconds idle) const {
    if (stats_.frames == 0 && first_frame_by_ < last_heard_ + idle) {
        throw TimeoutError("receiver: the sender connected but sent no frame in time (a new sender must "
                           "announce its format and start streaming promptly)");
    }
    throw TimeoutError(fmt::format("receiver: no frame and no keepalive for {} ms "
                                   "after {} frames: is the sender stuck?",
                                   idle.count(), stats_.frames));
}

void FrameReceiver::waited(const Waited& w) {
    if (w.kind == Waited::kCompletions) {
        wc_count_ = w.completions;
        return;
    }
    if (w.kind != Waited::kCmEvent) return;
    if (w.event->type == RDMA_CM_EVENT_DISCONNECTED && end_arrived()) {
        // The sender ended the stream and hung up. What is left to hand
        // out waits for our own invalidates, and a send queue completes
        // in order: behind a credit that the gone peer will never
        // acknowledge (until RC retries run out, seconds). Stopping the
        // QP flushes them at once; a QP in error takes no more writes,
        // so what is in the ring stays as it is (on_completion()).
        sender_hung_up_ = true;
        path_->stop();
        return;
    }
    lost(*w.event);
}

void FrameReceiver::mark_failed() noexcept {
    if (allowed(state_, ReceiverState::kFailed)) step(state_, ReceiverState::kFailed);
}

void FrameReceiver::lost(const CmEvent& ev) {
    mark_failed();
    device_removed_ = ev.type == RDMA_CM_EVENT_DEVICE_REMOVAL;
    if (ev.type == RDMA_CM_EVENT_DISCONNECTED) {
        throw ConnectionError(fmt::format("receiver: the sender went away after {} frames without ending "
                                          "the stream ({}): it was killed, crashed or lost its link",
                                          stats_.frames, describe(ev)));
    }
    throw ConnectionError(
        fmt::format("receiver: connection lost after {} frames: {}", stats_.frames, explain_lost_connection(ev)));
}

void FrameReceiver::checked_on_completion(const ibv_wc& wc) {
    try {
        on_completion(wc);
    } catch (const ProtocolError& e) {
        mark_failed();
        // One place names the peer for every refusal (no cost until one is thrown).
        throw ProtocolError(fmt::format("receiver: refused the sender at {}: {}", path_->peer_name(), e.what()));
    }
}

std::optional<ReceivedFrame> FrameReceiver::checked_next_arrived() {
    try {
        return next_arrived();
    } catch (const ProtocolError& e) {
        mark_failed();
        throw ProtocolError(fmt::format("receiver: refused the sender at {}: {}", path_->peer_name(), e.what()));
    }
}

std::string FrameReceiver::refused_request() const {
    // What the receiver knows: its NIC refused a request of the sender's.
    // Not which slot it aimed at (the NIC reports neither key nor address),
    // so the slots it held no credit for are named as such.
    if (!windows_) {
        return "the NIC refused a write (or read) of the sender's outside the ring or with a key it was not "
               "given, and nothing of it landed";
    }
    const std::string slots = slots_.uncredited();
    return fmt::format("the NIC refused a write (or read) of the sender's outside its credits, and nothing of it "
                       "landed{}{}",
                       slots.empty() ? "" : "; it held no credit for ", slots);
}

void FrameReceiver::failed(const ibv_wc& wc, Work work) {
    // A write through a key the sender holds no credit for (a window
    // invalidated, or bound over another slot): the NIC refused it before a
    // byte landed. A write whose receive the NIC had taken says so here (a
    // single-packet write on rxe); a longer one leaves only the flush below.
    if (work == Work::kControlRecv && wc.status == IBV_WC_REM_ACCESS_ERR) {
        throw ProtocolError(refused_request());
    }
    // A receive that failed (not flushed) is the sender's doing: a message
    // longer than the receive's buffer (LOC_LEN_ERR on a NIC, an invalid
    // request on rxe), never one of our own sends.
    if (work == Work::kControlRecv && wc.status != IBV_WC_WR_FLUSH_ERR) {
        throw ProtocolError(fmt::format("the sender sent a message longer than the {}-byte receive buffers, which "
                                        "the receive refused: {}",
                                        wire::kControlPayloadMax, ibv_wc_status_str(wc.status)));
    }
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
        // The QP is in error and we did not stop it: a work request of ours
        // failed (its completion says why), or the NIC refused a request of
        // the sender's (completion_poller.hpp, FlushCause). The sender's
        // hang-up that follows is its consequence, not the cause.
        const FlushCause cause = path_->flush_cause();
        if (cause.peer_request) {
            throw ProtocolError(refused_request());
        }
        if (cause.own) {
            failed(*cause.own, decode_work_id(cause.own->wr_id).work);
        }
    }
    // A sender that dies makes our next credit SEND fail (remote operation
    // error, retries exceeded) as its kernel tears the QP down, often just
    // before its disconnect arrives: the disconnect says what happened.
    if (std::optional<CmEvent> ev = config_.hang_up_wait.count() > 0 ? path_->wait_event(config_.hang_up_wait)
                                                                    : path_->next_event()) {
        lost(*ev);
    }
    mark_failed();
    path_->fail(wc, "receiver");
}

void FrameReceiver::on_completion(const ibv_wc& wc) {
    const WorkId id = decode_work_id(wc.wr_id);
    if (wc.status != IBV_WC_SUCCESS) {
        if (end_arrived()) {
            // After its end of stream the sender may hang up at once: a credit
            // of ours (and its binds) then fails, and what is posted behind it
            // is flushed. Every frame before the end of stream has arrived
            // (RC order), and nothing can write the ring any more: the QP is
            // in error, and a type 2 window takes writes through it only.
            if (id.work == Work::kInvalidate) {
                invalidated_[id.index] = 1;
            }
            return;
        }
        failed(wc, id.work);
    }
    switch (id.work) {
    case Work::kCreditSend: // a signalled credit message went out
        credit_acked_ = std::max(credit_acked_, id.index + 1); // and, in order, every one before it
        return;
    case Work::kControlSend: // our ring advert went out
    case Work::kLeavingSend: // (leave() polls for its own)
        return;
    case Work::kInvalidate: // the window of the frame in this slot: nothing can write the slot now
        invalidated_[id.index] = 1;
        return;
    case Work::kBindWindow: return; // binds go unsignalled: only a failed one completes
    case Work::kControlRecv: break;   // what the sender sent: below
    default:
        throw std::logic_error(fmt::format("receiver: a completion of work request kind {}, which a receiver "
                                           "never posts",
                                           static_cast<int>(id.work)));
    }
    last_heard_ = Clock::now(); // from the sender: a frame or a control message (vDSO, no syscall)
    if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
        throw ProtocolError(fmt::format("the sender sent a message without an immediate (opcode {}, {} bytes)",
                                        static_cast<int>(wc.opcode), wc.byte_len));
    }
    const std::uint64_t buffer = id.index; // the receive's control buffer
    if (wc.opcode == IBV_WC_RECV) { // a control message
        const wire::Control kind = wire::decode_control(ntohl(wc.imm_data));
        if ((kind == wire::Control::kEndOfStream || kind == wire::Control::kKeepalive) && wc.byte_len != 0) {
            throw ProtocolError(fmt::format("the sender's {} message carries {} bytes; it has no payload",
                                            kind == wire::Control::kKeepalive ? "keepalive" : "end of stream",
                                            wc.byte_len));
        }
        switch (kind) {
        case wire::Control::kKeepalive: post_recv(buffer); return; // the sender lives
        case wire::Control::kEndOfStream:
            step(state_, ReceiverState::kEndArrived);
            [[fallthrough]];
        case wire::Control::kFormat:
        case wire::Control::kClock: break; // acted on in order, after the frames before it
        case wire::Control::kRing:
        case wire::Control::kCredits:
            throw ProtocolError(fmt::format("the sender sent a {} message: only receivers send those",
                                            kind == wire::Control::kRing ? "ring" : "credits"));
        case wire::Control::kAuth: throw ProtocolError("the sender sent a key proof after the handshake");
        case wire::Control::kJoin: throw ProtocolError("the sender sent a join proof after the handshake");
        case wire::Control::kLeaving: throw ProtocolError("the sender sent a leaving message: only receivers send it");
        }
    } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) { // a frame
        const wire::SlotImm imm = slots_.arrive(ntohl(wc.imm_data));
        recv_of_slot_[imm.slot] = buffer;
        if (windows_) {
            // Until this completes the sender can still write the slot: the
            // frame is checked and handed out only after (next_arrived).
            const Flow& flow = flows_[flow_of_slot_[imm.slot]];
            ibv_send_wr inv{};
            inv.wr_id = work_id(Work::kInvalidate, imm.slot);
            flow.ring->invalidate_request(imm.slot - flow.base, inv);
            inv.send_flags = IBV_SEND_SIGNALED;
            path_->post_send(inv, "ibv_post_send(IBV_WR_LOCAL_INV)");
        }
    } else {
        throw ProtocolError(fmt::format("unexpected completion opcode {}", static_cast<int>(wc.opcode)));
    }
    if (arrived_count_ == arrived_.size()) {
        throw std::logic_error("receiver: more arrivals pending than slots and receives");
    }
    arrived_[(arrived_head_ + arrived_count_++) % arrived_.size()] = wc;
}

std::optional<ReceivedFrame> FrameReceiver::next_arrived() {
    while (arrived_count_ > 0) {
        const ibv_wc wc = arrived_[arrived_head_];
        if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
            const std::uint16_t slot = wire::decode_slot_imm(ntohl(wc.imm_data), total_slots_).slot;
            if (windows_ && invalidated_[slot] == 0) {
                return std::nullopt; // its invalidate has not completed yet
            }
            invalidated_[slot] = 0;
            arrived_head_ = (arrived_head_ + 1) % arrived_.size();
            --arrived_count_;
            return hand_out(wc);
        }
        arrived_head_ = (arrived_head_ + 1) % arrived_.size();
        --arrived_count_;
        if (wire::decode_control(ntohl(wc.imm_data)) == wire::Control::kEndOfStream) {
            step(state_, ReceiverState::kEnded);
            return std::nullopt;
        }
        if (wire::decode_control(ntohl(wc.imm_data)) == wire::Control::kClock) {
            take_clock(decode_work_id(wc.wr_id).index, wc.byte_len);
        } else {
            take_format(decode_work_id(wc.wr_id).index, wc.byte_len);
        }
    }
    return std::nullopt;
}

ReceivedFrame FrameReceiver::hand_out(const ibv_wc& wc) {
    const wire::SlotImm imm = wire::decode_slot_imm(ntohl(wc.imm_data), total_slots_); // checked on arrival too
    const std::uint8_t flow_id = flow_of_slot_[imm.slot];
    Flow& flow = flows_[flow_id];
    const auto slot = flow.ring->slot(imm.slot - flow.base);
    ReceivedFrame f;
    f.slot = imm.slot;
    const wire::SlotHeader h = wire::decode_slot_header(slot, imm);
    f.header = FrameHeader{.sequence = h.sequence, .pts = h.pts, .duration = h.duration,
                           .payload_size = h.payload_size, .flags = h.flags, .format_id = h.format_id,
                           .sent_at_ns = h.sent_at_ns, .flow = h.flow};
    // The slot's range says the flow; the header must agree (a torn or
    // forged frame, or a sender that numbers flows otherwise).
    if (h.flow != flow_id) {
        throw ProtocolError(fmt::format("slot {} is flow {}'s, but its frame {} says flow {}", imm.slot, flow_id,
                                        h.sequence, h.flow));
    }
    // Frame numbers rise within a flow (a live sender's drops leave gaps;
    // nothing goes back).
    if (flow.frames != 0 && f.header.sequence <= flow.last_sequence) {
        throw ProtocolError(fmt::format("slot {} holds frame {} of flow {}, but frame {} came already: frame "
                                        "numbers must rise",
                                        imm.slot, f.header.sequence, flow_id, flow.last_sequence));
    }
    flow.last_sequence = f.header.sequence;
    const std::uint16_t format_id = flow.format ? flow.format->id : 0;
    if (f.header.format_id != format_id) {
        throw ProtocolError(fmt::format("frame {} of flow {} is in format {}, the flow's format is {}",
                                        f.header.sequence, flow_id, f.header.format_id, format_id));
    }
    f.format = flow.format ? &*flow.format : nullptr;
    f.clock = clock_ ? &*clock_ : nullptr;
    f.format_changed = std::exchange(flow.format_changed, false);
    // decode_slot_header bounds payload + side data by the slot: no overflow.
    const std::size_t written = wire::kSlotHeaderSize + std::size_t{f.header.payload_size} + h.side_data_size;
    if (wc.byte_len != written) {
        throw ProtocolError(fmt::format("slot {}: the write carried {} bytes, its header claims {}", imm.slot,
                                        wc.byte_len, written));
    }
    f.payload = slot.subspan(wire::kSlotHeaderSize, f.header.payload_size);
    if (h.side_data_size != 0) { // after the payload; bounded by the format (never by the ring's room)
        const std::uint32_t bound = flow.format ? flow.format->max_side_data : 0;
        if (h.side_data_size > bound) {
            throw ProtocolError(fmt::format("frame {} carries {} bytes of side data, its format allows {}",
                                            f.header.sequence, h.side_data_size, bound));
        }
        auto& entries = side_of_slot_[imm.slot];
        const std::size_t n = wire::decode_side_data(
            slot.subspan(wire::kSlotHeaderSize + f.header.payload_size, h.side_data_size), imm.slot, entries);
        f.side_data = std::span<const SideData>(entries.data(), n);
    }
    f.arrived_at_ns = wall_clock_ns();
    if (f.header.sent_at_ns != 0 && f.arrived_at_ns >= f.header.sent_at_ns) {
        stats_.add_latency(std::chrono::nanoseconds(f.arrived_at_ns - f.header.sent_at_ns));
    }
    if (stats_.frames != 0 && f.arrived_at_ns > last_arrival_ns_) {
        stats_.max_gap = std::max(stats_.max_gap, std::chrono::nanoseconds(f.arrived_at_ns - last_arrival_ns_));
    }
    last_arrival_ns_ = f.arrived_at_ns;
    ++flow.frames;
    ++stats_.frames;
    stats_.bytes += f.header.payload_size;
    return f;
}

void FrameReceiver::release(std::uint16_t slot) {
    credit_batch_[batched_].imm = slots_.release(slot); // throws on a slot that holds no frame: nothing noted
    // The receive the frame used goes back for the next write.
    const std::uint64_t buffer = recv_of_slot_[slot];
    recv_sges_[batched_] = {control_in_.addr() + buffer * wire::kControlPayloadMax,
                            static_cast<std::uint32_t>(wire::kControlPayloadMax), control_in_.lkey()};
    ibv_recv_wr& r = recv_batch_[batched_];
    r = {};
    r.wr_id = work_id(Work::kControlRecv, buffer);
    r.sg_list = &recv_sges_[batched_];
    r.num_sge = 1;
    ++batched_;
    if (batched_ >= flush_at_) {
        flush_credits();
    }
}

void FrameReceiver::flush_credits() {
    if (batched_ == 0 || credit_msgs_ - credit_acked_ >= kCreditBuffers ||
        state_ != ReceiverState::kStreaming) {
        // Nothing to send, or every buffer still in flight (at the next look,
        // after a completion), or the stream ended (or we left, or it
        // failed): the sender wants none.
        return;
    }
    // The receives the released frames used go back first: the sender may
    // write into those slots as soon as the credits arrive.
    for (std::size_t i = 0; i < batched_; ++i) {
        recv_batch_[i].next = i + 1 < batched_ ? &recv_batch_[i + 1] : nullptr;
    }
    path_->post_recv(recv_batch_.front(), "ibv_post_recv(list)");

    ibv_send_wr wr{};
    // With windows, each slot's window is bound afresh in front of the
    // credit, in the same post: a send queue executes a bind before any work
    // request posted after it (mlx5 fences the next one, rxe runs local
    // operations in order), so the window is in force before the credit
    // leaves, and the sender learns its key only from the credit.
    for (std::size_t i = 0; i < batched_; ++i) {
        const std::uint16_t slot = credit_batch_[i].imm.slot;
        const Flow& flow = flows_[flow_of_slot_[slot]];
        if (windows_) {
            ibv_send_wr& b = bind_batch_[i];
            b = {};
            b.wr_id = work_id(Work::kBindWindow, slot);
            credit_batch_[i].rkey = flow.ring->bind_request(slot - flow.base, b);
            b.next = i + 1 < batched_ ? &bind_batch_[i + 1] : &wr;
        } else {
            credit_batch_[i].rkey = flow.ring->ring_rkey();
        }
    }
    const std::size_t room = std::size_t{capacity_} * wire::kCreditSize;
    const std::size_t buffer = credit_msgs_ % kCreditBuffers;
    const auto out = credit_out_.bytes().subspan(buffer * room, room);
    const std::size_t size = wire::encode_credits({credit_batch_.data(), batched_}, out);
    ibv_sge sge{credit_out_.addr() + buffer * room, static_cast<std::uint32_t>(size), credit_out_.lkey()};
    wr.wr_id = work_id(Work::kCreditSend, credit_msgs_);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(wire::encode(wire::Control::kCredits));
    wr.send_flags = (credit_msgs_ + 1) % signal_every_ == 0 ? IBV_SEND_SIGNALED : 0;
    path_->post_send(windows_ ? bind_batch_.front() : wr, "ibv_post_send(binds, credits)");
    for (std::size_t i = 0; i < batched_; ++i) {
        if (windows_) {
            const std::uint16_t slot = credit_batch_[i].imm.slot;
            const Flow& flow = flows_[flow_of_slot_[slot]];
            flow.ring->bound(slot - flow.base, credit_batch_[i].rkey);
        }
        slots_.credit_sent(credit_batch_[i].imm.slot); // the sender owns these slots again
    }
    ++credit_msgs_;
    batched_ = 0;
}

} // namespace rdmastream
