// SPDX-License-Identifier: LGPL-2.1-or-later
// The narrow interface between a stream end (FrameSender, FrameReceiver)
// and what carries its messages: post a write with immediate or a send,
// post receives, poll and wait for completions, look at connection events.
// VerbsDatapath is the real one (an RC QP over rdma_cm); tests/harness has an
// in-memory fabric behind the same calls, so the protocol runs natively,
// in one process, in milliseconds. The vocabulary is verbs' own (ibv_send_wr,
// ibv_recv_wr, ibv_wc), so a stream end's code is the same over both.
//
// Thread rule: one thread drives a Datapath (the stream end's).
#pragma once

#include "datapath/completion_poller.hpp"
#include "memory/registered_region.hpp"
#include "memory/slot_ring.hpp"
#include "wire/wire.hpp"

#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace rdmastream {

class Datapath {
public:
    Datapath() = default;
    Datapath(const Datapath&) = delete;
    Datapath& operator=(const Datapath&) = delete;
    virtual ~Datapath() = default;

    // Memory this datapath can move, with ibv_reg_mr's access flags: pages
    // mapped for it and registered through register_pages.
    RegisteredRegion register_memory(std::size_t size, int access);
    // Pages mapped elsewhere (`locked`: the mapping's length), registered on
    // this datapath's device too (a sender's frame memory on a second path).
    virtual PageRegistration register_pages(std::span<std::byte> pages, std::size_t locked, int access) = 0;
    // A receiver's ring (slot_ring.hpp): with `windows` a region and a type
    // 2 window per slot, else one REMOTE_WRITE region.
    virtual std::unique_ptr<SlotRing> register_ring(std::uint32_t slot_count, std::uint32_t slot_size,
                                                    bool windows) = 0;
    // Whether the device binds type 2 memory windows; its name, for messages.
    virtual bool has_memory_windows() const = 0;
    virtual std::string device_name() const = 0;
    // A list of work requests (linked through `next`: RDMA_WRITE_WITH_IMM,
    // SEND_WITH_IMM, BIND_MW, LOCAL_INV); `what` names it in the
    // SystemError a refused post throws.
    virtual void post_send(ibv_send_wr& wr, const char* what) = 0;
    // A list of receives (linked through `next`).
    virtual void post_recv(ibv_recv_wr& list, const char* what) = 0;
    // A control message (wire.hpp): a signalled SEND_WITH_IMM of the first
    // `size` bytes of `from` (nothing when 0), immediate `kind`. What both
    // stream ends send one at a time goes through here (a sender's format,
    // keepalive and end of stream; a receiver's ring advert and leaving).
    // Two kinds post their own SEND_WITH_IMM: a receiver's credits
    // (signalled only every few, linked behind the windows' binds:
    // FrameReceiver::flush_credits) and the handshake's key proof (from the
    // handshake's own region: Handshake::post_proof).
    void post_control(wire::Control kind, const RegisteredRegion& from, std::size_t size, std::uint64_t wr_id,
                      const char* what);
    // Up to out.size() completions; never blocks.
    virtual std::size_t poll(std::span<ibv_wc> out) = 0;
    // As CompletionPoller::wait: completions, a connection event, a wake of
    // the stream end's Waker, or the deadline.
    virtual Waited wait(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) = 0;
    // wait() in two halves around one poll(2) over several datapaths
    // (PathWait; kEvent mode): CompletionPoller::begin_sleep and end_sleep.
    // The stream end's Waker is the caller's to sleep on.
    virtual std::optional<Waited> begin_sleep(std::span<ibv_wc> out, SleepFds& fds,
                                              std::chrono::steady_clock::time_point now,
                                              std::chrono::steady_clock::time_point& wake_at) = 0;
    virtual std::optional<Waited> end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds) = 0;
    // A connection event (the peer hung up, the device went), if one is
    // waiting; never blocks.
    virtual std::optional<CmEvent> next_event() = 0;
    // The same, waiting up to `timeout` for one (error paths only).
    virtual std::optional<CmEvent> wait_event(std::chrono::milliseconds timeout) = 0;
    // A failed completion: throws ConnectionError, with what the datapath
    // knows of the cause.
    [[noreturn]] void fail(const ibv_wc& wc, const char* side) {
        throw_failure(wc, side);
        throw std::logic_error("Datapath::throw_failure returned"); // it must throw
    }
    // After a flushed completion: what put the queue pair in error
    // (completion_poller.hpp). Error paths only.
    virtual FlushCause flush_cause() = 0;
    // Stops the queue pair: nothing touches posted buffers after this.
    virtual void stop() noexcept = 0;
    // Hangs up: the peer sees RDMA_CM_EVENT_DISCONNECTED.
    virtual void disconnect() noexcept = 0;
    // "198.18.0.2:40123", for messages.
    virtual std::string peer_name() const = 0;

protected:
    virtual void throw_failure(const ibv_wc& wc, const char* side) = 0; // fail(): must throw
};

// The verbs datapath: an RC connection and its completion poller.
class VerbsDatapath final : public Datapath {
public:
    // `waker` (may be null) interrupts wait(); it must outlive this.
    VerbsDatapath(RcConnection conn, PollMode mode, Waker* waker);

    // Set-up only (accept, connect, private data): the connection itself.
    RcConnection& connection() noexcept { return conn_; }
    // Who interrupts wait() from now on: a connection opened on a thread
    // that brings a path back (woken by its owner) goes to the stream
    // end's thread (woken by the stream's caller).
    void set_waker(Waker* waker) noexcept { poller_.set_waker(waker); }

    PageRegistration register_pages(std::span<std::byte> pages, std::size_t locked, int access) override;
    std::unique_ptr<SlotRing> register_ring(std::uint32_t slot_count, std::uint32_t slot_size, bool windows) override {
        return register_verbs_ring(conn_.pd(), slot_count, slot_size, windows);
    }
    bool has_memory_windows() const override { return has_type2_windows(conn_.pd()->context); }
    std::string device_name() const override { return ibv_get_device_name(conn_.pd()->context->device); }
    void post_send(ibv_send_wr& wr, const char* what) override;
    void post_recv(ibv_recv_wr& list, const char* what) override;
    std::size_t poll(std::span<ibv_wc> out) override { return poller_.poll(out); }
    Waited wait(std::span<ibv_wc> out, std::chrono::steady_clock::time_point deadline) override {
        return poller_.wait(out, deadline);
    }
    std::optional<Waited> begin_sleep(std::span<ibv_wc> out, SleepFds& fds, std::chrono::steady_clock::time_point now,
                                      std::chrono::steady_clock::time_point& wake_at) override {
        return poller_.begin_sleep(out, fds, now, wake_at);
    }
    std::optional<Waited> end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds) override {
        return poller_.end_sleep(out, fds);
    }
    std::optional<CmEvent> next_event() override;
    // CompletionPoller::arm: the fd to sleep on beside other connections'.
    int arm() { return poller_.arm(); }
    std::optional<CmEvent> wait_event(std::chrono::milliseconds timeout) override {
        return conn_.events().next(timeout);
    }
    FlushCause flush_cause() override { return poller_.flush_cause(); }
    void stop() noexcept override { conn_.stop_qp(); }
    void disconnect() noexcept override { conn_.disconnect(); }
    std::string peer_name() const override { return conn_.peer_name(); }

private:
    void throw_failure(const ibv_wc& wc, const char* side) override { poller_.fail(wc, side); }

    RcConnection conn_;       // declared first: the poller points into it
    CompletionPoller poller_;
};

} // namespace rdmastream
