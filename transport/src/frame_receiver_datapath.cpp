// FrameReceiver per-frame path: one batched CQ poll per up to 16 frames, no
// allocation, no copy; the only syscalls are the sleeps when idle.
#include "rdmastream/error.hpp"
#include "rdmastream/frame_receiver.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <utility>

namespace rdmastream {

std::optional<ReceivedFrame> FrameReceiver::next(std::chrono::milliseconds timeout) {
    if (ended_) {
        return std::nullopt;
    }
    for (;;) {
        while (wc_next_ < wc_count_) {
            const ibv_wc& wc = wcs_[wc_next_++];
            if (wc.status != IBV_WC_SUCCESS) {
                poller_.fail(wc, "receiver");
            }
            if (wc.opcode == IBV_WC_RECV) { // a control message
                switch (wire::decode_control(ntohl(wc.imm_data))) {
                case wire::Control::kEndOfStream: ended_ = true; return std::nullopt;
                case wire::Control::kKeepalive: post_recv(wc.wr_id); continue; // the sender lives
                case wire::Control::kFormat: take_format(wc.wr_id, wc.byte_len); continue;
                case wire::Control::kRing: break;
                }
                throw ProtocolError("the sender sent a ring advert: only receivers own rings");
            }
            if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
                continue; // a signalled credit SEND
            }
            const wire::SlotImm imm = slots_.arrive(ntohl(wc.imm_data));
            recv_of_slot_[imm.slot] = wc.wr_id;
            const auto slot = ring_->bytes().subspan(std::size_t{imm.slot} * config_.slot_size, config_.slot_size);
            ReceivedFrame f;
            f.slot = imm.slot;
            f.header = wire::decode_slot_header(slot, imm);
            const std::uint16_t format_id = format_ ? format_->id : 0;
            if (f.header.format_id != format_id) {
                throw ProtocolError(fmt::format("frame {} is in format {}, the stream's format is {}",
                                                f.header.sequence, f.header.format_id, format_id));
            }
            f.format = format_ ? &*format_ : nullptr;
            f.format_changed = std::exchange(format_changed_, false);
            if (wc.byte_len != wire::kSlotHeaderSize + f.header.payload_size) {
                throw ProtocolError(fmt::format("slot {}: the write carried {} bytes, its header claims {}", imm.slot,
                                                wc.byte_len, wire::kSlotHeaderSize + f.header.payload_size));
            }
            f.payload = slot.subspan(wire::kSlotHeaderSize, f.header.payload_size);
            f.arrived_at_ns = wall_clock_ns();
            if (f.header.sent_at_ns != 0 && f.arrived_at_ns >= f.header.sent_at_ns) {
                stats_.add_latency(std::chrono::nanoseconds(f.arrived_at_ns - f.header.sent_at_ns));
            }
            ++stats_.frames;
            stats_.bytes += f.header.payload_size;
            return f;
        }
        std::optional<CmEvent> ev;
        wc_next_ = 0;
        wc_count_ = poller_.wait(wcs_, timeout, ev);
        if (ev) {
            if (ev->type == RDMA_CM_EVENT_DISCONNECTED && ended_) {
                return std::nullopt; // the sender hung up after ending the stream
            }
            if (ev->type == RDMA_CM_EVENT_DISCONNECTED) {
                throw std::runtime_error(fmt::format("receiver: the sender went away after {} frames without ending "
                                                     "the stream ({}): it was killed, crashed or lost its link",
                                                     stats_.frames, describe(*ev)));
            }
            throw std::runtime_error(
                fmt::format("receiver: connection lost after {} frames: {}", stats_.frames, explain_lost_connection(*ev)));
        }
        if (wc_count_ == 0) {
            throw TimeoutError(fmt::format("receiver: no frame for {} ms after {} frames: is the sender stuck?",
                                           timeout.count(), stats_.frames));
        }
    }
}

void FrameReceiver::release(std::uint16_t slot) {
    const wire::SlotImm credit = slots_.release(slot);
    post_recv(recv_of_slot_[slot]); // the receive the frame used goes back for the next write
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = slot;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(wire::encode(credit));
    wr.send_flags = (++credits_sent_ % signal_every_ == 0) ? IBV_SEND_SIGNALED : 0;
    check_rc(ibv_post_send(conn_.qp(), &wr, &bad), "ibv_post_send(credit)");
}

} // namespace rdmastream
