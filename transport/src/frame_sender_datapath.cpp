// FrameSender per-frame path: one ibv_post_send per frame, completions
// polled in batches and signalled every slots/2 writes; no allocation, no
// copy of the payload.
#include "rdmastream/error.hpp"
#include "rdmastream/frame_sender.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

namespace rdmastream {

void FrameSender::pump(std::chrono::milliseconds timeout) {
    std::optional<CmEvent> ev;
    const std::size_t n = poller_.wait(wcs_, timeout, ev);
    if (ev && ev->type == RDMA_CM_EVENT_DISCONNECTED && eos_posted_ && credits_.all_home()) {
        // The receiver released every frame, took the end of stream and hung
        // up before our SEND's completion was polled: a clean end.
        end_acked_ = true;
        return;
    }
    if (ev) {
        throw std::runtime_error(fmt::format("sender: receiver went away after {} frames: {}", next_seq_,
                                             describe(*ev)));
    }
    if (n == 0) {
        throw std::runtime_error(fmt::format("sender: no credit for {} ms after {} frames: is the receiver stuck?",
                                             timeout.count(), next_seq_));
    }
    for (std::size_t i = 0; i < n; ++i) {
        const ibv_wc& wc = wcs_[i];
        if (wc.status != IBV_WC_SUCCESS) {
            throw std::runtime_error(fmt::format("sender: work completion failed: {}", describe_failed_wc(wc)));
        }
        if (wc.opcode == IBV_WC_SEND) { // the end of stream arrived
            end_acked_ = true;
            continue;
        }
        if (wc.opcode == IBV_WC_RDMA_WRITE) { // signalled: this write and all before it are done
            done_before_ = std::max(done_before_, wc.wr_id + 1);
            continue;
        }
        const wire::SlotImm credit = wire::decode_slot_imm(ntohl(wc.imm_data), ring_.slot_count);
        credits_.give_back(credit);
        // The receiver saw that write, so (RC ordering) every earlier one too.
        done_before_ = std::max(done_before_, last_seq_in_slot_[credit.slot] + 1);
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        wr.wr_id = wc.wr_id;
        check_rc(ibv_post_recv(conn_.qp(), &wr, &bad), "ibv_post_recv(credit)");
    }
}

void FrameSender::wait_done(std::uint64_t sequence, std::chrono::milliseconds timeout) {
    if (sequence >= next_seq_) {
        throw std::logic_error(fmt::format("wait_done({}): that frame was never sent", sequence));
    }
    while (!write_done(sequence)) {
        pump(timeout);
    }
}

std::uint64_t FrameSender::send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                                std::chrono::milliseconds timeout) {
    if (payload.size() > max_payload()) {
        throw UserError(fmt::format("a {}-byte frame does not fit the receiver's {}-byte slots: give the receiver "
                                    "larger slots",
                                    payload.size(), ring_.slot_size));
    }
    if (credits_.available() == 0) {
        ++stats_.credit_waits;
        while (credits_.available() == 0) {
            pump(timeout);
        }
    }
    const wire::SlotImm imm = *credits_.take();
    const std::uint64_t seq = next_seq_++;
    last_seq_in_slot_[imm.slot] = seq;
    const auto header = headers_.bytes().subspan(std::size_t{imm.slot} * wire::kSlotHeaderSize);
    wire::encode(wire::SlotHeader{seq, meta.pts, meta.duration, static_cast<std::uint32_t>(payload.size()),
                                  meta.flags, imm},
                 header.first<wire::kSlotHeaderSize>());

    ibv_sge sge[2] = {
        {headers_.addr() + std::uint64_t{imm.slot} * wire::kSlotHeaderSize,
         static_cast<std::uint32_t>(wire::kSlotHeaderSize), headers_.lkey()},
        {reinterpret_cast<std::uintptr_t>(payload.data()), static_cast<std::uint32_t>(payload.size()), lkey},
    };
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = seq;
    wr.sg_list = sge;
    wr.num_sge = payload.empty() ? 1 : 2;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(wire::encode(imm));
    wr.send_flags = ((seq + 1) % signal_every_ == 0) ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = ring_.addr + std::uint64_t{imm.slot} * ring_.slot_size;
    wr.wr.rdma.rkey = ring_.rkey;
    check_rc(ibv_post_send(conn_.qp(), &wr, &bad), "ibv_post_send(RDMA_WRITE_WITH_IMM)");
    ++stats_.frames;
    stats_.bytes += payload.size();
    return seq;
}

} // namespace rdmastream
