// SPDX-License-Identifier: LGPL-2.1-or-later
// An in-memory stand-in for one RC connection: two Datapaths in one
// process, so FrameSender and FrameReceiver run against each other natively
// (no NIC, no kernel) and every protocol state can be driven in
// milliseconds. It adds to the Soft-RoCE tests; it replaces none of them.
//
// What it does as an RC QP pair would: a write with immediate is copied into
// the peer's registered memory at post time and consumes the peer's oldest
// posted receive; a send is copied into that receive's buffer; completions
// arrive in order, the sender's only when signalled (errors always).
// Memory windows (type 2) bind and invalidate at post time; a write through
// a window must use its current key and fall inside its range. A write or
// send that finds no receive posted waits, and every work request posted
// after it, until the peer posts one: RcConnection sets rnr_retry 7, with
// which the NIC retries receiver-not-ready without end. Keys, bounds,
// access flags and receive sizes are checked as a NIC checks them, and a
// fault completes with the status a NIC reports: a bad rkey or range
// REM_ACCESS_ERR (nothing lands, and only the writer learns it, as on rxe),
// a bad lkey LOC_PROT_ERR, a send longer than the receive REM_INV_REQ_ERR,
// a peer that stopped or hung up RETRY_EXC_ERR, a post on a stopped end
// WR_FLUSH_ERR.
// disconnect() gives the peer RDMA_CM_EVENT_DISCONNECTED. A plain SEND (no
// immediate: IBV_WC_WITH_IMM clear at the peer) is carried too, so a test
// can play a hostile peer on an end of its own.
//
// Each end may be driven by its own thread. Per frame (a post of writes or
// sends, a poll, a post of receives) the two threads share no lock: each
// direction is a single-producer, single-consumer ring (an end's posted
// receives, taken by the peer's posts; the completions of its receives,
// pushed by the peer, polled by it), and the keys and windows are read
// lock-free; a mutex is left to set-up, connection events and the test's
// knobs (memory_fabric.cpp says who writes and who reads what). The
// harness's own cost per frame is then its payload copy (a NIC's DMA, here
// a memcpy on the posting thread) and a few atomics.
#pragma once

#include "datapath/datapath.hpp"

#include <chrono>
#include <cstdint>
#include <memory>

namespace rdmastream::harness {

class MemoryFabric {
public:
    MemoryFabric();
    ~MemoryFabric();
    MemoryFabric(MemoryFabric&&) noexcept = default;

    // End 0 or 1, once each. `waker` (may be null) interrupts its waits and
    // must outlive it; busy mode spins instead of sleeping.
    std::unique_ptr<Datapath> end(int side, PollMode mode = PollMode::kEvent, Waker* waker = nullptr);

    // Registrations of at least `bytes` take `delay` from now on, on the
    // registering thread, as pinning a large region does (ibv_reg_mr of a
    // GiB takes seconds): the end serves nothing meanwhile.
    void slow_registration(std::size_t bytes, std::chrono::milliseconds delay);

    // The fabric's device has no type 2 memory windows from now on (a
    // receiver then falls back to one REMOTE_WRITE region, and warns).
    void without_windows();

    // End `side`'s next post_send is refused with `err` (SystemError), as
    // ibv_post_send refuses one when the send queue is full (ENOMEM):
    // nothing of it is carried, and the QP stays up.
    void refuse_next_send(int side, int err);

    // The wire is cut (a link down, a partition): from now on nothing
    // either end posts lands, and each post completes with RETRY_EXC_ERR
    // (at once here; after the RC retries, ~2 s, on a NIC). No rdma_cm
    // event comes: each end learns it from its own posts, or its silence.
    void cut();
    // The wire goes silent as a NIC sees a dead link while its RC retries
    // run: from now on nothing either end posts lands or completes, and no
    // event comes, until that end is stopped (its queue then flushes). A
    // NIC gives up after its retries (~2 s on the bed); here nothing does.
    void hang();

    // Bytes the fabric copied (payloads, headers, messages).
    std::uint64_t copied_bytes() const noexcept;
    // Work requests end `side` posted: writes, and sends (control messages;
    // from a receiver, its credit messages and ring adverts).
    std::uint64_t writes_posted(int side) const noexcept;
    std::uint64_t sends_posted(int side) const noexcept;

    struct State; // shared with the ends
private:
    std::shared_ptr<State> state_;
};

} // namespace rdmastream::harness
