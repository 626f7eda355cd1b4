// FrameSender per-frame path: one ibv_post_send per frame, completions
// polled in batches and signalled every slots/2 writes; no allocation, no
// copy of the payload, two clock reads per frame (vDSO), and one poll(2) of
// the rdma_cm channel per 10 ms.
#include "rdmastream/error.hpp"
#include "rdmastream/frame_sender.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

void FrameSender::pump(std::chrono::milliseconds timeout) {
    if (timeout.count() == 0) {
        std::optional<CmEvent> none;
        take(poller_.poll(wcs_), none);
        return;
    }
    // Waiting for the receiver (a credit, a delivery, a control message's
    // completion). Wait in keepalive-sized slices and probe the receiver
    // between them: if every write was delivered and the receiver then lost
    // its link, only a SEND of ours can turn that into a failed completion
    // (RC retry) within seconds instead of the whole timeout.
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        const auto slice = std::max(std::chrono::milliseconds(1), std::min(opts_.keepalive, left));
        std::optional<CmEvent> ev;
        if (take(poller_.wait(wcs_, slice, ev), ev) > 0 || end_acked_) {
            return;
        }
        const auto now = Clock::now();
        if (control_in_flight_ && now - control_posted_at_ >= opts_.ack_limit) {
            throw std::runtime_error(fmt::format(
                "sender: the receiver's side has not acknowledged a control message for {} ms after {} frames, "
                "though the NIC reported no error: the path to the receiver is down (link, cable, switch) or its "
                "host hangs",
                opts_.ack_limit.count(), next_post_));
        }
        if (now >= deadline) {
            throw TimeoutError(fmt::format("sender: no credit for {} ms after {} frames: is the receiver stuck?",
                                           timeout.count(), next_post_));
        }
        keepalive_if_idle();
    }
}

std::size_t FrameSender::take(std::size_t n, const std::optional<CmEvent>& ev) {
    for (std::size_t i = 0; i < n; ++i) {
        handle(wcs_[i]);
    }
    if (ev && ev->type == RDMA_CM_EVENT_DISCONNECTED && eos_posted_ && retired_before_ == next_post_) {
        // The receiver had every frame, took the end of stream and hung up
        // before our SEND's completion was polled: a clean end.
        end_acked_ = true;
        return n;
    }
    if (ev) {
        if (ev->type == RDMA_CM_EVENT_DISCONNECTED) {
            throw std::runtime_error(fmt::format("sender: receiver went away after {} frames: {}", next_post_,
                                                 describe(*ev)));
        }
        throw std::runtime_error(
            fmt::format("sender: connection lost after {} frames: {}", next_post_, explain_lost_connection(*ev)));
    }
    return n;
}

void FrameSender::look_for_events() {
    // A hang-up arrives as an rdma_cm event, which only a wait looks at. A
    // sender that never has to wait (a fan-out member with credits to spare)
    // looks every 10 ms (one poll(2)), so a receiver that leaves is noticed
    // at once, not when a later write runs out of RC retries.
    const auto now = Clock::now();
    if (now < next_event_look_) {
        return;
    }
    next_event_look_ = now + std::chrono::milliseconds(10);
    if (std::optional<CmEvent> ev = conn_.events().next(std::chrono::milliseconds(0))) {
        take(0, ev);
    }
}

void FrameSender::keepalive_if_idle() {
    if (!control_in_flight_ && !eos_posted_ && Clock::now() - last_post_time_ >= opts_.keepalive) {
        post_control(wire::Control::kKeepalive);
    }
}

void FrameSender::handle(const ibv_wc& wc) {
    if (wc.status != IBV_WC_SUCCESS) {
        poller_.fail(wc, "sender");
    }
    switch (wc.opcode) {
    case IBV_WC_SEND: // a control message arrived
        control_in_flight_ = false;
        end_acked_ = end_acked_ || eos_posted_;
        // RC completes a send queue in order: every write posted before this
        // message is delivered too, signalled or not. So a keepalive or the
        // end of stream hands back frames a stuck receiver's missing credits
        // would otherwise keep.
        retire_through(control_after_);
        return;
    case IBV_WC_RDMA_WRITE: // signalled: this write and every one before it are done
        retire_through(wc.wr_id + 1);
        return;
    case IBV_WC_RECV: {
        const std::uint32_t imm = ntohl(wc.imm_data);
        if ((imm & 0xffffu) == wire::kControlSlot) {
            if (wire::decode_control(imm) != wire::Control::kRing) {
                throw ProtocolError("the receiver sent a control message only senders send");
            }
            const auto bytes = control_in_.bytes().subspan(wc.wr_id * kControlInSize, wc.byte_len);
            const wire::RingAdvert ring = wire::decode_ring_advert(bytes);
            post_credit_recv(wc.wr_id);
            adopt_ring(ring);
            return;
        }
        const wire::SlotImm credit = wire::decode_slot_imm(imm, ring_.slot_count);
        credits_.give_back(credit);
        // The receiver saw that write, so (RC ordering) every earlier one too.
        retire_through(last_post_in_slot_[credit.slot] + 1);
        post_credit_recv(wc.wr_id);
        return;
    }
    default:
        throw ProtocolError(fmt::format("sender: unexpected completion opcode {}", static_cast<int>(wc.opcode)));
    }
}

void FrameSender::retire_through(std::uint64_t posted_before) {
    const auto now = Clock::now();
    for (; retired_before_ < posted_before; ++retired_before_) {
        const InFlight& f = in_flight_[retired_before_ % in_flight_.size()];
        stats_.add_latency(now - f.posted);
        if (opts_.on_done) {
            opts_.on_done(f.cookie, FrameFate::kDelivered);
        }
    }
}

void FrameSender::drop_pending() {
    ++stats_.drops;
    const std::uint64_t cookie = pending_->cookie;
    pending_.reset();
    if (opts_.on_done) {
        opts_.on_done(cookie, FrameFate::kDropped);
    }
}

std::uint64_t FrameSender::oldest_undone() const noexcept {
    if (retired_before_ < next_post_) {
        return in_flight_[retired_before_ % in_flight_.size()].number;
    }
    return pending_ ? pending_->number : next_number_;
}

void FrameSender::progress() {
    pump(std::chrono::milliseconds(0));
    look_for_events();
    if (pending_ && credits_.available() > 0) {
        const Pending frame = *pending_;
        pending_.reset();
        post(frame);
    }
    keepalive_if_idle();
}

void FrameSender::wait_done(std::uint64_t number, std::chrono::milliseconds timeout) {
    if (number >= next_number_) {
        throw std::logic_error(fmt::format("wait_done({}): that frame was never sent", number));
    }
    while (oldest_undone() <= number) {
        if (pending_ && credits_.available() > 0) {
            progress();
        } else {
            pump(timeout);
        }
    }
}

std::uint64_t FrameSender::send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                                std::uint64_t cookie, std::chrono::milliseconds timeout) {
    if (payload.size() > max_payload()) {
        throw UserError(fmt::format("a {}-byte frame does not fit the receiver's {}-byte slots: give the receiver "
                                    "larger slots",
                                    payload.size(), ring_.slot_size));
    }
    const Pending frame{payload, lkey, meta, cookie, next_number_++};
    progress();
    if (credits_.available() == 0) {
        ++stats_.credit_waits;
        if (policy_ == Policy::kLive) {
            if (pending_) {
                drop_pending(); // the older frame goes: the newest is what a live viewer wants
            }
            pending_ = frame;
            return frame.number;
        }
        while (credits_.available() == 0) {
            pump(timeout);
        }
    }
    post(frame);
    return frame.number;
}

void FrameSender::post(const Pending& frame) {
    const wire::SlotImm imm = *credits_.take();
    const std::uint64_t index = next_post_;

    const auto header = headers_.bytes().subspan(std::size_t{imm.slot} * wire::kSlotHeaderSize);
    wire::encode(wire::SlotHeader{frame.number, frame.meta.pts, frame.meta.duration,
                                  static_cast<std::uint32_t>(frame.payload.size()), frame.meta.flags, imm, format_id_,
                                  wall_clock_ns()},
                 header.first<wire::kSlotHeaderSize>());
    ibv_sge sge[2] = {
        {headers_.addr() + std::uint64_t{imm.slot} * wire::kSlotHeaderSize,
         static_cast<std::uint32_t>(wire::kSlotHeaderSize), headers_.lkey()},
        {reinterpret_cast<std::uintptr_t>(frame.payload.data()), static_cast<std::uint32_t>(frame.payload.size()),
         frame.lkey},
    };
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = index;
    wr.sg_list = sge;
    wr.num_sge = frame.payload.empty() ? 1 : 2;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(wire::encode(imm));
    // Every slots/2 writes, and the write that takes the last credit: a
    // receiver that then releases nothing must not keep the delivered
    // frames' memory from the caller (in a fan-out, from everyone).
    wr.send_flags = ((index + 1) % signal_every_ == 0 || credits_.available() == 0) ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = ring_.addr + std::uint64_t{imm.slot} * ring_.slot_size;
    wr.wr.rdma.rkey = ring_.rkey;
    check_rc(ibv_post_send(conn_.qp(), &wr, &bad), "ibv_post_send(RDMA_WRITE_WITH_IMM)");
    // Only a posted frame is ours: a failed post leaves it with the caller.
    ++next_post_;
    last_post_in_slot_[imm.slot] = index;
    const auto now = Clock::now();
    in_flight_[index % in_flight_.size()] = InFlight{frame.cookie, frame.number, now};
    last_post_time_ = now;
    ++stats_.frames;
    stats_.bytes += frame.payload.size();
}

} // namespace rdmastream
