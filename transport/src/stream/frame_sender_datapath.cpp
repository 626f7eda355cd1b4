// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameSender per-frame path: one ibv_post_send per frame, completions
// polled in batches and signalled every slots/2 writes (or half the
// caller's depth, SenderOptions::caller_depth); credits arrive
// coalesced (one receive per message, not per slot); no allocation, no copy
// of the payload, two clock reads through the vDSO (no syscall: the steady
// clock once per call, progress_at, and the wall clock for the header), one
// poll(2) of the rdma_cm channel per 10 ms, and syscalls in waits only (see
// CompletionPoller).
#include "rdmastream/error.hpp"
#include "stream/frame_sender.hpp"
#include "wire/side_data_wire.hpp"

#include <arpa/inet.h>

#include <array>
#include <cstring>

#include <fmt/format.h>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

void FrameSender::pump_now(TimePoint now) {
    const std::size_t n = path_->poll(wcs_);
    for (std::size_t i = 0; i < n; ++i) {
        handle(wcs_[i], now);
    }
}

void FrameSender::handle(const ibv_wc& wc, TimePoint now) {
    try {
        handle_one(wc, now);
    } catch (const ProtocolError& e) {
        mark_failed();
        // One place names the peer for every refusal (no cost until one is thrown).
        throw ProtocolError(fmt::format("sender: refused the receiver at {}: {}", path_->peer_name(), e.what()));
    }
}

bool FrameSender::pump(Clock::time_point deadline, std::chrono::milliseconds timeout) {
    // Waiting for the receiver (a credit, a delivery, a control message's
    // completion). The wait also ends when a keepalive is due: if every
    // write was delivered and the receiver then lost its link, only a SEND
    // of ours can turn that into a failed completion (RC retry) within
    // seconds instead of the whole timeout.
    for (;;) {
        const Waited w = path_->wait(wcs_, std::min(deadline, timer(deadline)));
        if (w.kind == Waited::kWoken) return false;
        if (w.kind != Waited::kTimeout) {
            waited(w);
            return true;
        }
        const auto now = Clock::now();
        timer_passed(now);
        if (now >= deadline && awaiting_ring()) {
            throw TimeoutError(fmt::format("sender: the receiver did not send its grown ring within {} ms of stream "
                                           "format {} (frames of up to {} bytes): is it stuck registering memory?",
                                           timeout.count(), posted_format_.id, posted_format_.max_frame_size));
        }
        if (now >= deadline) {
            throw TimeoutError(fmt::format("sender: no credit for {} ms after {} frames: is the receiver stuck?",
                                           timeout.count(), next_post_));
        }
    }
}

Clock::time_point FrameSender::timer(Clock::time_point deadline) const noexcept {
    // With a control message in flight no keepalive can go, so its
    // acknowledgement limit; while the receiver grows its ring none may go
    // (keepalive_if_idle), so only the caller's deadline; otherwise the
    // keepalive's due time.
    return control_in_flight_ ? control_posted_at_ + opts_.ack_limit
           : awaiting_ring()  ? deadline
                              : last_post_time_ + opts_.keepalive;
}

void FrameSender::waited(const Waited& w) {
    if (w.kind == Waited::kCompletions) {
        const auto polled = Clock::now(); // the wait may have been long: a fresh read
        for (std::size_t i = 0; i < w.completions; ++i) {
            handle(wcs_[i], polled);
        }
    } else if (w.kind == Waited::kCmEvent) {
        on_cm_event(w.event);
    }
}

void FrameSender::timer_passed(Clock::time_point now) {
    if (control_in_flight_ && now - control_posted_at_ >= opts_.ack_limit) {
        mark_failed();
        throw ConnectionError(fmt::format(
            "sender: the receiver's side has not acknowledged a control message for {} ms after {} frames, "
            "though the NIC reported no error: the receiver has stopped taking messages (its process is "
            "stopped or stuck), or the path to it is down (link, cable, switch) or its host hangs",
            opts_.ack_limit.count(), next_post_));
    }
    keepalive_if_idle(now);
}

// The one place rdma_cm events reach a sender, in any state.
void FrameSender::on_cm_event(const std::optional<CmEvent>& ev) {
    if (!ev || state_ == SenderState::kEnded || state_ == SenderState::kLeft) {
        return; // the stream is over: a hang-up now is the expected one
    }
    if (ev->type == RDMA_CM_EVENT_DISCONNECTED && state_ == SenderState::kEnding && retired_before_ == next_post_) {
        // The receiver had every frame, took the end of stream and hung up
        // before our SEND's completion was polled: a clean end.
        step(state_, SenderState::kEnded);
        return;
    }
    if (ev->type == RDMA_CM_EVENT_DISCONNECTED) {
        // A receiver that leaves on purpose says so first and hangs up once
        // our NIC acknowledged it, so its message is in our queue before the
        // hang-up, though perhaps not handled yet: handle what is there (it
        // throws PeerLeft) before calling the hang-up a failure. Failed
        // completions among them are the hang-up's doing: it explains them.
        std::array<ibv_wc, 16> late{};
        for (std::size_t n; (n = path_->poll(late)) != 0;) {
            const auto polled = Clock::now();
            for (std::size_t i = 0; i < n; ++i) {
                if (late[i].status == IBV_WC_SUCCESS) handle(late[i], polled);
            }
        }
        if (state_ == SenderState::kEnded) {
            return; // among them, our end of stream's acknowledgement
        }
    }
    const bool format_on_its_way = state_ == SenderState::kFormatPosted;
    mark_failed();
    device_removed_ = ev->type == RDMA_CM_EVENT_DEVICE_REMOVAL;
    if (ev->type == RDMA_CM_EVENT_DISCONNECTED && format_on_its_way) {
        // The protocol has no message for "format refused": a receiver that
        // will not take a format (a frame above its limit, a layout it
        // refuses) says why in its own log and hangs up.
        throw ConnectionError(fmt::format(
            "sender: receiver went away after {} frames, on stream format {} (frames of up to {} bytes): it refused "
            "the format (its log says why: e.g. frames above its --max-frame-bytes / max-frame-bytes) or died: {}",
            next_post_, posted_format_.id, posted_format_.max_frame_size, describe(*ev)));
    }
    if (ev->type == RDMA_CM_EVENT_DISCONNECTED) {
        throw ConnectionError(
            fmt::format("sender: receiver went away after {} frames: {}", next_post_, describe(*ev)));
    }
    throw ConnectionError(
        fmt::format("sender: connection lost after {} frames: {}", next_post_, explain_lost_connection(*ev)));
}

void FrameSender::failed(const ibv_wc& wc, Work work) {
    // A receive that failed (not flushed) is the receiver's doing: a message
    // longer than the receive's buffer (LOC_LEN_ERR on a NIC, an invalid
    // request on rxe), never one of our own writes or sends.
    if (work == Work::kControlRecv && wc.status != IBV_WC_WR_FLUSH_ERR) {
        throw ProtocolError(fmt::format("the receiver sent a message longer than the {}-byte receive buffers "
                                        "(credits for every slot or a ring advert fit), which the receive refused: {}",
                                        kControlInSize, ibv_wc_status_str(wc.status)));
    }
    // A receiver that dies makes our writes fail (retries exceeded, remote
    // access error as its ring is deregistered) about when its disconnect
    // arrives: the disconnect says what happened, and the completion how
    // it met us (a NAK's kind: what a receiver that did not die did).
    if (std::optional<CmEvent> ev = opts_.hang_up_wait.count() > 0 ? path_->wait_event(opts_.hang_up_wait)
                                                                  : path_->next_event()) {
        try {
            on_cm_event(ev);
        } catch (const ConnectionError& e) {
            throw ConnectionError(fmt::format("{} (our last work request failed: {})", e.what(), describe_failed_wc(wc)));
        }
    }
    mark_failed();
    path_->fail(wc, "sender");
}

void FrameSender::look_for_events(TimePoint now) {
    // A hang-up arrives as an rdma_cm event, which only a wait looks at. A
    // sender that never has to wait (a fan-out member with credits to spare)
    // looks every 10 ms (one poll(2)), so a receiver that leaves is noticed
    // at once, not when a later write runs out of RC retries.
    if (now < next_event_look_) {
        return;
    }
    next_event_look_ = now + std::chrono::milliseconds(10);
    on_cm_event(path_->next_event());
}

// No keepalive while the receiver grows its ring (awaiting_ring): it pins
// the new ring in one registration call, seconds for a large ring, and
// re-posts no receive meanwhile. It posted one per slot plus one and holds
// nothing (a grow waits for every credit), so a keepalive a second would run
// out of receives on a small ring (RNR, the stream dies, as one did after 5 s
// of registering 2 GiB), and none is needed: the format's own SEND was
// acknowledged, and the receiver knows we wait. A dead path meanwhile is the
// caller's timeout (or a disconnect), named as such in pump().
void FrameSender::keepalive_if_idle(TimePoint now) {
    const bool streaming = state_ == SenderState::kStreaming || state_ == SenderState::kFormatPosted;
    if (streaming && !control_in_flight_ && !awaiting_ring() && now - last_post_time_ >= opts_.keepalive) {
        post_control(wire::Control::kKeepalive);
    }
}

void FrameSender::handle_one(const ibv_wc& wc, TimePoint now) {
    const WorkId id = decode_work_id(wc.wr_id);
    if (wc.status != IBV_WC_SUCCESS) {
        failed(wc, id.work);
    }
    switch (id.work) {
    case Work::kControlSend: // a control message arrived
        control_in_flight_ = false;
        if (state_ == SenderState::kEnding) {
            step(state_, SenderState::kEnded); // the end of stream's own acknowledgement
        }
        settle_format(); // in kFormatPosted: the format's
        // RC completes a send queue in order: every write posted before this
        // message is delivered too, signalled or not. So a keepalive or the
        // end of stream hands back frames a stuck receiver's missing credits
        // would otherwise keep.
        retire_through(control_after_, now);
        return;
    case Work::kFrameWrite: // signalled: this write and every one before it are done
        if (id.index >= retired_before_) { // its entry is still its own (a credit may have retired it)
            ack_sum_ += now - in_flight(id.index).posted;
            ++ack_samples_;
        }
        retire_through(id.index + 1, now);
        return;
    case Work::kControlRecv: {
        if (wc.opcode != IBV_WC_RECV) {
            throw ProtocolError(fmt::format("unexpected completion opcode {} on a receive (a write into the "
                                            "sender?)",
                                            static_cast<int>(wc.opcode)));
        }
        if ((wc.wc_flags & IBV_WC_WITH_IMM) == 0) {
            throw ProtocolError(fmt::format("the receiver sent a message without an immediate ({} bytes)",
                                            wc.byte_len));
        }
        const std::uint64_t buffer = id.index;
        if (buffer >= total_slots_) {
            throw std::logic_error(fmt::format("sender: a receive in buffer {}, beyond its {} slots", buffer,
                                               total_slots_));
        }
        const auto bytes = credit_buffer(buffer).first(std::min<std::size_t>(wc.byte_len, kControlInSize));
        switch (const wire::Control kind = wire::decode_control(ntohl(wc.imm_data))) {
        case wire::Control::kCredits: take_credits(bytes, now); break;
        case wire::Control::kRing: adopt_ring(wire::decode_ring_advert(bytes)); break;
        case wire::Control::kLeaving:
            if (wc.byte_len != 0) {
                throw ProtocolError(fmt::format("the receiver's leaving message carries {} bytes: it has none",
                                                wc.byte_len));
            }
            // Crossed with our end of stream, whose acknowledgement came
            // first in the same batch of completions: the stream has ended,
            // and the receiver had every frame it wanted (seen on CI as
            // "no transition from ended to receiver left").
            if (state_ == SenderState::kEnded) break;
            // The stream ends here, for the caller to tell from a failure.
            step(state_, SenderState::kLeft);
            throw PeerLeft(fmt::format("the receiver {} left after {} frames: it has every frame it wants",
                                       path_->peer_name(), next_post_));
        default:
            throw ProtocolError(fmt::format("the receiver sent control message kind {}: only senders send it",
                                            static_cast<unsigned>(kind)));
        }
        post_credit_recv(buffer); // decoded: the buffer is free again
        return;
    }
    default:
        throw std::logic_error(fmt::format("sender: a completion of work request kind {}, which a sender never "
                                           "posts",
                                           static_cast<int>(id.work)));
    }
}

void FrameSender::take_credits(std::span<const std::byte> bytes, TimePoint now) {
    const std::size_t n = wire::decode_credits(bytes, total_slots_, credits_in_);
    ++credit_messages_;
    std::uint64_t seen_before = retired_before_;
    for (std::size_t i = 0; i < n; ++i) {
        const wire::Credit& c = credits_in_[i];
        Flow& flow = flows_[flow_of_slot_[c.imm.slot]]; // decode_credits bounds the slot by total_slots_
        // With windows the key is the receiver's new window's (the NIC
        // checks it); without, the flow's slots', and nothing else is right.
        if (!flow.ring.windows() && c.rkey != flow.ring.rkey) {
            throw ProtocolError(fmt::format("credit for slot {} carries rkey {:#x}, but its slots have no memory "
                                            "windows: every credit must carry their rkey {:#x}",
                                            c.imm.slot, c.rkey, flow.ring.rkey));
        }
        flow.credits.give_back(c.imm);
        slot_rkey_[c.imm.slot] = c.rkey;
        seen_before = std::max(seen_before, last_post_in_slot_[c.imm.slot] + 1);
    }
    // The receiver saw those writes, so (RC ordering) every earlier one too.
    retire_through(seen_before, now);
}

void FrameSender::retire_through(std::uint64_t posted_before, TimePoint now) {
    for (; retired_before_ < posted_before; ++retired_before_) {
        const InFlight& f = in_flight(retired_before_);
        --flows_[f.flow].in_flight;
        stats_.add_latency(now - f.posted);
        last_delivered_posted_ = f.posted;
        if (opts_.on_done) {
            opts_.on_done(f.cookie, FrameFate::kDelivered);
        }
    }
}

void FrameSender::drop_pending(std::uint8_t flow) {
    ++stats_.drops;
    std::optional<Pending>& pending = flows_[flow].pending;
    const std::uint64_t cookie = pending->cookie;
    pending.reset();
    if (opts_.on_done) {
        opts_.on_done(cookie, FrameFate::kDropped);
    }
}

std::uint64_t FrameSender::oldest_undone(std::uint8_t flow) const noexcept {
    const Flow& f = flows_[flow];
    if (f.in_flight > 0) {
        // Its oldest write still out: the first of the flow's from the
        // oldest unretired on (the first one at once in a one-flow stream).
        for (std::uint64_t i = retired_before_; i < next_post_; ++i) {
            if (in_flight(i).flow == flow) return in_flight(i).number;
        }
    }
    return f.pending ? f.pending->number : f.next_number;
}

void FrameSender::progress() { progress_at(Clock::now()); }

void FrameSender::progress_at(TimePoint now) {
    if (state_ == SenderState::kEnding || state_ == SenderState::kEnded) {
        return; // finish() moves what is left
    }
    check_usable("progress");
    pump_now(now);
    look_for_events(now);
    for (std::uint8_t i = 0; i < kMaxFlows; ++i) {
        Flow& f = flows_[i];
        if (f.pending && f.credits.available() > 0) {
            post(i, *f.pending, now); // a refused post leaves it pending
            f.pending.reset();
        }
    }
    keepalive_if_idle(now);
}

bool FrameSender::wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) {
    check_usable("wait_done");
    const Flow& f = flows_[flow];
    if (number >= f.next_number) {
        throw std::logic_error(fmt::format("wait_done({}): that frame of flow {} was never sent", number, flow));
    }
    const auto deadline = Clock::now() + timeout;
    while (oldest_undone(flow) <= number) {
        if (f.pending && f.credits.available() > 0) {
            progress();
        } else if (!pump(deadline, timeout)) {
            return false;
        }
    }
    return true;
}

bool FrameSender::offer(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                        std::uint64_t cookie, std::chrono::milliseconds timeout, std::uint64_t& number) {
    check_usable("send");
    if ((meta.flags & ~wire::kFrameFlagsDefined) != 0) {
        throw std::invalid_argument(fmt::format("send: frame flags {:#06x} set reserved bits", meta.flags));
    }
    if (!has_flow(meta.flow)) {
        throw UserError(fmt::format("a frame of flow {}, which has no slots: announce its format first (set_format "
                                    "with StreamFormat::flow {})",
                                    meta.flow, meta.flow));
    }
    Flow& flow = flows_[meta.flow];
    const std::size_t side_size = wire::side_data_size(meta.side_data); // refuses bad entries (UserError)
    if (side_size > flow.max_side_data) {
        throw UserError(fmt::format("a frame with {} bytes of side data, where its stream format declares room "
                                    "for {}: raise StreamFormat::max_side_data",
                                    side_size, flow.max_side_data));
    }
    if (payload.size() + side_size > max_payload(meta.flow)) {
        throw UserError(fmt::format("a {}-byte frame (with {} bytes of side data) does not fit the receiver's "
                                    "{}-byte slots: give the receiver larger slots",
                                    payload.size(), side_size, flow.ring.slot_size));
    }
    auto now = Clock::now(); // this call's one read, unless it waits
    progress_at(now);
    if (flow.credits.available() == 0) {
        if (!flow.waiting_for_credit) { // once per frame, however often a wake interrupts its wait
            ++stats_.credit_waits;
            flow.waiting_for_credit = true;
        }
        if (policy_ == Policy::kLive) {
            if (flow.pending) {
                drop_pending(meta.flow); // the older frame goes: the newest is what a live viewer wants
            }
            flow.waiting_for_credit = false;
            // Its side data may not outlive this call: kept in the pending entry.
            if (side_size != 0) {
                wire::encode_side_data(meta.side_data, pending_side_entry(meta.flow));
            }
            flow.pending =
                Pending{payload, lkey, meta, cookie, flow.next_number++, static_cast<std::uint32_t>(side_size)};
            flow.pending->meta.side_data = {};
            number = flow.pending->number;
            return true;
        }
        const auto deadline = Clock::now() + timeout;
        while (flow.credits.available() == 0) {
            if (!pump(deadline, timeout)) {
                return false; // not taken: the caller offers it again, under the same number
            }
        }
        now = Clock::now(); // after the wait
    }
    flow.waiting_for_credit = false;
    const Pending frame{payload, lkey, meta, cookie, flow.next_number, static_cast<std::uint32_t>(side_size)};
    post(meta.flow, frame, now);
    ++flow.next_number; // posted: a refused post took no number, as a woken wait
    number = frame.number;
    return true;
}

void FrameSender::post(std::uint8_t flow_id, const Pending& frame, TimePoint now) {
    Flow& flow = flows_[flow_id];
    const wire::SlotImm imm = flow.credits.front(); // every caller saw a credit; taken once the write is posted
    const std::uint64_t index = next_post_;

    const auto header = headers_.bytes().subspan(std::size_t{imm.slot} * wire::kSlotHeaderSize);
    wire::encode(wire::SlotHeader{frame.number, frame.meta.pts, frame.meta.duration,
                                  static_cast<std::uint32_t>(frame.payload.size()), frame.meta.flags, imm,
                                  flow.format_id, wall_clock_ns(), frame.side_size, flow_id},
                 header.first<wire::kSlotHeaderSize>());
    ibv_sge sge[3] = {
        {headers_.addr() + std::uint64_t{imm.slot} * wire::kSlotHeaderSize,
         static_cast<std::uint32_t>(wire::kSlotHeaderSize), headers_.lkey()},
        {reinterpret_cast<std::uintptr_t>(frame.payload.data()), static_cast<std::uint32_t>(frame.payload.size()),
         frame.lkey},
        {},
    };
    int sges = frame.payload.empty() ? 1 : 2;
    if (frame.side_size != 0) {
        // Side data lands right after the payload: the NIC gathers it from
        // the slot's staging entry (a copy of a few hundred bytes, never the
        // payload's), encoded there now or, for a pending frame, moved from
        // the pending entry.
        const auto entry = side_entry(imm.slot);
        if (frame.meta.side_data.empty()) {
            std::memcpy(entry.data(), pending_side_entry(flow_id).data(), frame.side_size);
        } else {
            wire::encode_side_data(frame.meta.side_data, entry);
        }
        sge[sges++] = {reinterpret_cast<std::uintptr_t>(entry.data()), frame.side_size, side_->lkey()};
    }
    ibv_send_wr wr{};
    wr.wr_id = work_id(Work::kFrameWrite, index);
    wr.sg_list = sge;
    wr.num_sge = sges;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(wire::encode(imm));
    // Every signal_every_ writes (those whose index + 1 is a multiple of it:
    // next_signalled_, counted rather than divided), and the write that
    // takes the last credit: a receiver that then releases nothing must not
    // keep the delivered frames' memory from the caller (in a fan-out, from
    // everyone).
    const bool every = index == next_signalled_;
    const bool signalled = every || flow.credits.available() == 1;
    wr.send_flags = signalled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = flow.ring.addr + (std::uint64_t{imm.slot} - flow.ring.slot_base) * flow.ring.slot_size;
    wr.wr.rdma.rkey = slot_rkey_[imm.slot]; // the slot's credit's key, never the advert's ring key
    path_->post_send(wr, "ibv_post_send(RDMA_WRITE_WITH_IMM)");
    // Only a posted frame is ours, and only a posted write uses its slot's
    // credit: a refused post (SystemError) leaves the frame with the caller
    // and the credit with us.
    flow.credits.pop_front();
    ++flow.in_flight;
    ++next_post_;
    if (every) {
        next_signalled_ += signal_every_;
    }
    last_post_in_slot_[imm.slot] = index;
    in_flight(index) = InFlight{frame.cookie, frame.number, now, flow_id, signalled};
    last_post_time_ = now;
    ++stats_.frames;
    stats_.bytes += frame.payload.size();
}

} // namespace rdmastream
