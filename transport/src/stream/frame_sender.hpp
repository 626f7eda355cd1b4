// SPDX-License-Identifier: LGPL-2.1-or-later
// The sending end of one stream: writes frames from the caller's registered
// memory into ring slots it holds credits for.
//
// Each frame is one WRITE_WITH_IMM with two SGEs: the 64-byte slot header
// from the sender's own small header region, then the caller's payload, in
// place (no copy); and a third for a frame with side data, from the
// sender's staging entry for the slot (those few bytes are copied). The caller learns through `on_done` when a frame's memory
// is free again: delivered (the receiver has it) or dropped (live policy).
//
// A stream carries up to kMaxFlows flows (a programme's video, audio,
// data): each has its own range of the receiver's slots (its ring advert),
// credits, formats, frame numbers and pending frame, so one flow's frames
// never wait for another's credits; the connection, its control messages
// and the order of writes are shared. Flow 0's range comes with the
// handshake; another flow's answers its first format (set_format).
//
// Thread rule: one thread drives a FrameSender; on_done runs on it, inside
// send(), progress(), wait_done() or finish(). SenderOptions::waker may be
// woken from any thread: it interrupts send() and wait_done().
#pragma once

#include "datapath/datapath.hpp"
#include "rdmastream/frame.hpp"
#include "rdmastream/policy.hpp"
#include "rdmastream/sender.hpp" // kMaxSenderSlots
#include "wire/peer_auth.hpp"
#include "setup/rc_connection.hpp"
#include "setup/listener.hpp"
#include "memory/registered_region.hpp"
#include "datapath/slot_credits.hpp"
#include "rdmastream/stream_states.hpp"
#include "rdmastream/stream_stats.hpp"
#include "rdmastream/waker.hpp"
#include "stream/opening.hpp"
#include "stream/peer_left.hpp"
#include "wire/wire.hpp"
#include "wire/work_id.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

struct SenderOptions {
    Policy policy = Policy::kLossless;
    FrameDoneFn on_done;                         // may be empty
    std::chrono::milliseconds keepalive{1000};   // idle time before a keepalive goes out
    // How long a failed completion waits for the rdma_cm event that may
    // explain it (the receiver hung up) before it is reported; 0 for one
    // path of two, whose wait would hold the other path's frames.
    std::chrono::milliseconds hang_up_wait{200};
    // A control message (keepalive, format, end of stream) the receiver's
    // NIC has not acknowledged within this means the receiver stopped taking
    // messages (its NIC retries a receiver-not-ready forever: rnr_retry 7)
    // or the path is gone even if our NIC reports nothing: the sender gives
    // up. Acks take microseconds; RC retry reports a lost peer in ~2 s.
    std::chrono::milliseconds ack_limit{5000};
    PollMode poll_mode = PollMode::kEvent;
    std::string device; // RDMA device by name; empty: the one the route picks
    // Memory registered once for several senders (a fan-out); empty: the
    // connection's own PD.
    std::shared_ptr<ibv_pd> shared_pd;
    // Interrupts a send() or wait_done() that waits (GStreamer's unlock);
    // empty: only the timeout ends a wait. set_format() and finish() wait
    // through wakes (they are bounded by their timeouts).
    std::shared_ptr<Waker> waker;
    // A pre-shared key both ends must prove before the receiver's ring is
    // sent (handshake.hpp); null: no authentication, and a receiver with a
    // key refuses this sender.
    std::shared_ptr<const PresharedKey> key;
    // Frames the caller keeps in flight at most before it waits for the
    // oldest (wait_done); 0: as many as the ring has slots. Writes are
    // signalled at least every half of it: else a caller keeping fewer than
    // slots/2 frames out, facing a receiver that holds its frames (so no
    // credit comes back), waits for the next keepalive to retire them.
    std::uint32_t caller_depth = 0;
};

class Handshake;

class FrameSender {
public:
    // The largest ring a sender accepts (its queues are sized before the
    // receiver's advert arrives).
    static constexpr std::uint32_t kMaxSlots = kMaxSenderSlots;

    // Connects, retrying while the receiver is not up yet, for `patience`;
    // nullptr once the options' waker is woken between two tries.
    static std::unique_ptr<FrameSender> connect(const Endpoint& receiver, const SenderOptions& opts,
                                                std::chrono::milliseconds patience);
    // Waits for a receiver to dial in (its hello comes with the request,
    // its ring advert over the connection once it is up, after the key
    // proofs if there is a key: handshake.hpp); receivers refused meanwhile
    // (the listener logs them) do not end the wait, and many may be on
    // their way at once (stream/pending_peers.hpp): the first through is
    // taken. nullptr once the options' waker is woken; TimeoutError after
    // `timeout`, naming `where` (default: the listener's port).
    static std::unique_ptr<FrameSender> accept(Listener& listener, const SenderOptions& opts,
                                               std::chrono::milliseconds timeout, const std::string& where = {});
    // How a FrameSender opens a connection (stream/opening.hpp), for a
    // caller that accepts receivers itself (a fan-out, over PendingPeers).
    static OpeningPlan opening_plan(const SenderOptions& opts);
    // A FrameSender over a connection through its handshake.
    static std::unique_ptr<FrameSender> over(Opening opening, const SenderOptions& opts);
    // Over any datapath (the in-memory fabric of the tests, for one), with
    // the receiver's ring already known.
    FrameSender(std::unique_ptr<Datapath> path, const wire::RingAdvert& ring, const SenderOptions& opts);
    FrameSender(const FrameSender&) = delete;
    FrameSender& operator=(const FrameSender&) = delete;
    // stop(), then the rest goes.
    ~FrameSender();
    // Stops the QP and waits until the NIC has let go of every payload,
    // then reports every frame not yet delivered as dropped (on_done fires
    // exactly once per frame, whatever happens). The sender is done after
    // it (nothing but the destructor may follow), but what it owns stays:
    // pd() and memory registered on it remain valid until the destructor,
    // for an owner whose buffers (rdmasink's pool) outlive the stream.
    void stop() noexcept;

    // A flow's range of the receiver's slots (flow 0's always exists).
    const wire::RingAdvert& ring(std::uint8_t flow = 0) const noexcept { return flows_[flow].ring; }
    // Whether a flow has its slots (its first format settled; flow 0 always).
    bool has_flow(std::uint8_t flow) const noexcept { return flow < kMaxFlows && flows_[flow].ring.slot_count != 0; }
    // The largest payload (with side data) a flow's slots take; 0 for a flow without slots.
    std::uint32_t max_payload(std::uint8_t flow = 0) const noexcept {
        const std::uint32_t size = flows_[flow].ring.slot_size;
        return size > wire::kSlotHeaderSize ? size - std::uint32_t{wire::kSlotHeaderSize} : 0;
    }
    // Register payload memory here (over verbs; nullptr over another datapath).
    ibv_pd* pd() const noexcept { return conn_ != nullptr ? conn_->pd() : nullptr; }
    // The same, for memory that may outlive this sender (it keeps the PD).
    std::shared_ptr<ibv_pd> shared_pd() const noexcept { return conn_ != nullptr ? conn_->shared_pd() : nullptr; }
    // Payload memory this sender's datapath can move, over any datapath.
    RegisteredRegion register_memory(std::size_t size, int access) { return path_->register_memory(size, access); }
    // Pages mapped elsewhere, registered on this sender's device too (frame
    // memory shared by two paths: frame_memory_impl.hpp).
    PageRegistration register_pages(std::span<std::byte> pages, std::size_t locked, int access) {
        return path_->register_pages(pages, locked, access);
    }

    // Offers one frame of flow meta.flow (its format announced; flow 0 may
    // send without one). `payload` must lie in memory registered on pd() with
    // `lkey` and stay unchanged until on_done(cookie, ...) fires. Lossless:
    // waits up to `timeout` for a free slot (TimeoutError after it). Live:
    // never waits. Returns the frame's number in its flow (counting dropped frames too),
    // or nullopt when the waker interrupted the wait: then the frame was not
    // taken (no number used, no on_done), and the caller may offer it again.
    // Throws UserError if it does not fit a slot, ConnectionError when the
    // connection failed, and PeerLeft once the receiver said it wants no
    // more (as every other call that waits). A post the device refuses
    // (SystemError) takes nothing either: no number, no credit, no on_done.
    std::optional<std::uint64_t> send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                                      std::uint64_t cookie, std::chrono::milliseconds timeout) {
        std::uint64_t number = 0;
        if (!offer(payload, lkey, meta, cookie, timeout, number)) {
            return std::nullopt;
        }
        return number;
    }
    // Handles whatever completions and credits are ready, posts the pending
    // frame if a slot came free, sends a keepalive when idle. Never blocks.
    void progress();
    // Announces a flow's format (format.flow); its frames sent after it
    // carry its id. A flow's first format makes the receiver give it slots:
    // set_format returns once they came.
    // Posts the pending frame first (it is in the old format), then waits
    // (up to `timeout` per step) for the control message in flight, if any;
    // frames in flight may stay held downstream (the format follows them in
    // order), unless the new frames outgrow the flow's slots: then it waits
    // for every frame of the flow to be released (its credits home). Returns once the
    // format's message is acknowledged and, if the ring had to grow, the
    // receiver's new ring has come: the connection stays up.
    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout);
    // set_format for a sender that has sent nothing yet (a receiver joining
    // a running fan-out), without waiting: posts the format;
    // format_settled() says when frames may follow (the receiver took it,
    // and grew its ring if it had to). Neither blocks.
    void begin_format(const wire::StreamFormat& format);
    bool format_settled();
    // Tells the receiver which absolute instant pts 0 is (a kClock message);
    // frames after it are on it. Waits (up to `timeout`) for the control
    // message in flight, if any, not for this one's acknowledgement.
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout);
    // The same without waiting (a fan-out's joining receiver): false when
    // another control message is in flight, to be tried again later.
    bool try_post_clock(const ClockAnchor& anchor);
    // A frame the caller dropped without offering it (live, no free slot,
    // and it would have had to copy the frame first): counted as offered and
    // dropped, so the next frame's number leaves the gap a receiver counts.
    // No on_done: nothing was handed over.
    void skip_frame(std::uint8_t flow = 0) noexcept {
        ++flows_[flow].next_number;
        ++stats_.drops;
    }
    // Numbers a flow's frames from `first` on (a receiver joining a running
    // stream sees the stream's frame numbers). Before the flow's first send.
    void start_numbering_at(std::uint64_t first, std::uint8_t flow = 0);
    // Waits until frame `number` of `flow` has its memory free (delivered or
    // dropped); false when the waker interrupted the wait first.
    bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow = 0);
    // Posts the pending frame, waits until every frame is delivered (not
    // released: downstream may keep the last ones as long as it likes) and a
    // format on its way is settled, sends end of stream, waits for its
    // acknowledgement, and disconnects. Returns at once if the receiver
    // had left already (state() kLeft); one that leaves meanwhile ends it
    // with PeerLeft.
    void finish(std::chrono::milliseconds timeout);

    // pump() in steps, for a caller that waits on several senders at once
    // (two paths: stream/path_sender.hpp) with one PathWait: wait on
    // datapath() into completions() until timer(), then hand what came to
    // waited() (completions handled, an rdma_cm event acted on) or, once
    // the timer passed, call timer_passed() (a keepalive due; a control
    // message unacknowledged past ack_limit: ConnectionError).
    Datapath& datapath() noexcept { return *path_; }
    std::span<ibv_wc> completions() noexcept { return wcs_; }
    std::chrono::steady_clock::time_point timer(std::chrono::steady_clock::time_point deadline) const noexcept;
    void waited(const Waited& w);
    void timer_passed(std::chrono::steady_clock::time_point now);
    // Credit messages taken from the receiver: one means its stream end
    // is taking this connection's frames (a two-path sender trusts a path
    // that came back only from then on).
    std::uint64_t credit_messages() const noexcept { return credit_messages_; }
    // Whether the connection still answers, for a two-path sender that
    // would rather not wait for a dead path's RC retries. The NIC
    // acknowledges a signalled write once it landed, whatever the
    // receiving program does with the frame, so:
    //   oldest_unacknowledged: when the oldest write not yet delivered was
    //     posted (none: nothing out); cheap, a first look;
    //   oldest_unacknowledged_signalled: the same of the oldest signalled
    //     one (a look through the writes out: at most the ring's slots);
    //   ack_time: the mean time from posting a signalled write to its
    //     acknowledgement, and how many were measured;
    //   last_delivered_posted: when the latest write delivered was posted.
    std::optional<std::chrono::steady_clock::time_point> oldest_unacknowledged() const noexcept {
        if (retired_before_ == next_post_) return std::nullopt;
        return in_flight(retired_before_).posted;
    }
    std::optional<std::chrono::steady_clock::time_point> oldest_unacknowledged_signalled() const noexcept {
        for (std::uint64_t i = retired_before_; i < next_post_; ++i) {
            if (in_flight(i).signalled) return in_flight(i).posted;
        }
        return std::nullopt;
    }
    struct AckTime {
        std::chrono::nanoseconds mean{0};
        std::uint64_t samples = 0;
    };
    AckTime ack_time() const noexcept {
        if (ack_samples_ == 0) return {};
        return {ack_sum_ / static_cast<std::int64_t>(ack_samples_), ack_samples_};
    }
    std::chrono::steady_clock::time_point last_delivered_posted() const noexcept { return last_delivered_posted_; }
    // The connection failed because its RDMA device is going away
    // (RDMA_CM_EVENT_DEVICE_REMOVAL): a kernel that cannot take the device's
    // resources back (rxe) waits, and the device cannot come back, until
    // this process lets go of everything it holds there.
    bool device_removed() const noexcept { return device_removed_; }
    // Where on_done goes from now on (a two-path sender's own bookkeeping,
    // set before the first send).
    void set_on_done(FrameDoneFn on_done) { opts_.on_done = std::move(on_done); }
    // Free slots the sender holds credits for now (call progress() first for
    // an up-to-date answer): send() posts at once when this is non-zero. A
    // live caller can skip preparing a frame (a copy) that would only be
    // dropped.
    std::uint32_t credits_available(std::uint8_t flow = 0) const noexcept { return flows_[flow].credits.available(); }

    const StreamStats& stats() const noexcept { return stats_; }
    // Where the stream is (stream_states.hpp): tests, and messages.
    SenderState state() const noexcept { return state_; }
    // Live if this sender or the receiver asked for it.
    Policy policy() const noexcept { return policy_; }
    // The receiver's address, for messages.
    std::string peer() const { return path_->peer_name(); }
    // The RDMA device the connection runs on ("rxe0").
    std::string device() const { return path_->device_name(); }

private:
    using TimePoint = std::chrono::steady_clock::time_point;

    struct InFlight {
        std::uint64_t cookie = 0;
        std::uint64_t number = 0; // frame number in its flow (what the caller saw)
        TimePoint posted;         // as the call that posted it read the clock (see progress_at)
        std::uint8_t flow = 0;
        bool signalled = false; // its completion comes as the NIC's acknowledgement
    };
    struct Pending {
        std::span<const std::byte> payload;
        std::uint32_t lkey = 0;
        FrameMeta meta; // its side_data, for a frame kept pending, already in side_'s pending entry
        std::uint64_t cookie = 0;
        std::uint64_t number = 0;
        std::uint32_t side_size = 0; // bytes of encoded side data
    };
    // Where a frame's encoded side data waits for its write: one entry of
    // side_stride_ bytes per slot number, and one per flow for its pending
    // frame (pending_side_entry).
    std::span<std::byte> side_entry(std::size_t index) const noexcept {
        return side_->bytes().subspan(index * side_stride_, side_stride_);
    }
    std::span<std::byte> pending_side_entry(std::uint8_t flow) const noexcept {
        return side_entry(kMaxSlots + flow);
    }
    // What a flow has of its own; the connection's writes, control messages
    // and completions are shared.
    struct Flow {
        wire::RingAdvert ring;         // its range of slots; slot_count 0: none yet
        SenderCredits credits{0};
        std::optional<RegisteredRegion> control_in; // a credit receive's buffer per slot of the range
        std::optional<Pending> pending;
        std::uint64_t next_number = 0; // frames offered
        std::uint16_t format_id = 0;   // stamped on every frame
        std::uint32_t max_side_data = 0; // its format's room for side data per frame
        bool waiting_for_credit = false; // the frame being offered has had to wait (counted once)
        std::uint32_t in_flight = 0;     // posted writes not yet retired
    };

    // Takes the slot's credit once the write is posted; `now` is the calling
    // call's clock read, the frame's posted time.
    void post(std::uint8_t flow, const Pending& frame, TimePoint now);
    // send(), the frame's number through `number` and false for nullopt. GCC
    // returns an optional<uint64_t> through the stack, its flag stored as a
    // byte and read back in a word (a load that waits for the store: perf
    // put most of send()'s own time there); send() is inline over this, so
    // the optional is made where it is used.
    bool offer(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta, std::uint64_t cookie,
               std::chrono::milliseconds timeout, std::uint64_t& number);
    // Posts every flow's pending frame (or one flow's), waiting for a slot.
    void flush_pending(std::chrono::milliseconds timeout);
    void flush_pending(std::uint8_t flow, std::chrono::milliseconds timeout);
    // A flow's slots, from its ring advert: credits, keys, credit receives.
    void open_flow(const wire::RingAdvert& ring);
    bool all_credits_home() const noexcept; // every flow's
    void post_control(wire::Control kind, std::size_t payload_size = 0);
    void post_format(const wire::StreamFormat& format); // enters kFormatPosted
    // In kFormatPosted: the format's SEND acknowledged and, if it grows the
    // ring, the new ring adopted: the format is in force (kStreaming).
    void settle_format();
    // A terminal state refuses `call`: PeerLeft once the receiver left, an
    // error after a failure, a logic_error after finish() or stop().
    void check_usable(const char* call) const;
    void mark_failed() noexcept; // kFailed, unless the stream had already ended one way or another
    void post_credit_recv(std::uint64_t buffer); // buffer: a slot number (its flow's control_in)
    std::span<std::byte> credit_buffer(std::uint64_t buffer) const noexcept;
    void adopt_ring(const wire::RingAdvert& ring); // a flow's new or grown slots
    // Handles one batch of completions, waiting for it until `deadline` and
    // sending keepalives while it waits. False when the waker woke it first.
    // Throws on failure, and TimeoutError (naming `timeout`, the caller's
    // whole wait) at the deadline.
    bool pump(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);
    // progress() at `now`: the steady clock, read once per call and shared by
    // what the call does (deliveries learned, events looked for, a keepalive
    // due, frames posted), so a frame costs one read of it, not five. A call
    // takes well under a microsecond unless it waits, and a wait reads the
    // clock again when it returns (pump).
    void progress_at(TimePoint now);
    void pump_now(TimePoint now);          // handles what is ready, never waits
    void on_cm_event(const std::optional<CmEvent>& ev); // an rdma_cm event: ConnectionError on a lost connection
    // A failed completion (of work request `work`): throws (ConnectionError,
    // or ProtocolError for a receive the receiver overran), naming the
    // receiver's hang-up if that is what caused it.
    [[noreturn]] void failed(const ibv_wc& wc, Work work);
    void take_credits(std::span<const std::byte> bytes, TimePoint now); // a kCredits message
    void keepalive_if_idle(TimePoint now); // a keepalive when nothing went out for opts_.keepalive
    // A format that grows the ring is posted and the receiver's new ring has
    // not come yet: it is registering memory and serving nothing.
    bool awaiting_ring() const noexcept {
        return state_ == SenderState::kFormatPosted && posted_format_.grows && !posted_format_.ring_adopted;
    }
    void look_for_events(TimePoint now); // rdma_cm events (a hang-up), at most every 10 ms
    // handle_one(), with the receiver's address added to a ProtocolError;
    // `now`: when the completion was polled, for the latency of what it
    // retires.
    void handle(const ibv_wc& wc, TimePoint now);
    void handle_one(const ibv_wc& wc, TimePoint now);
    // Frames below this posted index are delivered, learned at `now`.
    void retire_through(std::uint64_t posted_before, TimePoint now);
    void drop_pending(std::uint8_t flow);
    // A flow's lowest frame number not yet delivered or dropped.
    std::uint64_t oldest_undone(std::uint8_t flow) const noexcept;

    SenderOptions opts_;
    std::unique_ptr<Datapath> path_; // declared before what lives on it
    RcConnection* conn_ = nullptr;   // set-up over verbs (accept, established); null over another datapath
    Policy policy_;
    std::array<Flow, kMaxFlows> flows_;
    std::vector<std::uint8_t> flow_of_slot_; // by slot number: whose range it is in
    std::uint32_t total_slots_ = 0;          // every flow's range together (ranges follow each other)
    RegisteredRegion headers_;     // one 64-byte header per slot number
    // Side data staging (side_entry), sized by the largest max_side_data a
    // format declared; none until one declares some.
    std::optional<RegisteredRegion> side_;
    std::uint32_t side_stride_ = 0;
    // A credit receive's buffer: room for a credit message of every slot, or
    // a ring advert with window keys, of the largest ring a sender takes.
    static constexpr std::size_t kControlInSize =
        std::max(wire::ring_advert_size(kMaxSlots, true), std::size_t{kMaxSlots} * wire::kCreditSize);
    RegisteredRegion control_out_; // what the sender's control messages carry
    // The key each slot's next frame is written with: the one its latest
    // credit carried (with windows, that credit's window), or the advert's.
    std::vector<std::uint32_t> slot_rkey_;
    std::vector<std::uint64_t> last_post_in_slot_; // posted index of the latest write per slot
    // By posted index, masked: at most one per slot, and a power of two
    // long (slot_count rounded up), so no division per frame.
    std::vector<InFlight> in_flight_;
    InFlight& in_flight(std::uint64_t index) noexcept { return in_flight_[index & (in_flight_.size() - 1)]; }
    const InFlight& in_flight(std::uint64_t index) const noexcept {
        return in_flight_[index & (in_flight_.size() - 1)];
    }
    std::vector<wire::Credit> credits_in_;          // a decoded credit message; kMaxSlots entries
    std::uint64_t next_post_ = 0;     // writes posted
    std::uint64_t retired_before_ = 0; // every write below this posted index is delivered
    TimePoint last_delivered_posted_{}; // the posted time of the write below retired_before_
    std::chrono::nanoseconds ack_sum_{0}; // ack_time(): post to acknowledgement, signalled writes
    std::uint64_t ack_samples_ = 0;
    std::uint32_t signal_every_; // writes between signalled ones: half the ring, or of the caller's depth
    std::uint64_t next_signalled_ = 0; // posted index of the next write signalled for signal_every_
    bool control_in_flight_ = false;
    std::chrono::steady_clock::time_point control_posted_at_; // while control_in_flight_
    std::uint64_t control_after_ = 0; // writes posted before the control message in flight
    std::chrono::steady_clock::time_point next_event_look_{};
    struct PostedFormat {
        std::uint16_t id = 0;
        std::uint8_t flow = 0;
        bool grows = false; // the receiver must give the flow (larger) slots before frames follow
        std::uint32_t max_frame_size = 0; // payload and side data
        std::uint32_t max_side_data = 0;
        bool ring_adopted = false; // the grown ring arrived (it may come before our SEND's completion)
    };
    SenderState state_ = SenderState::kStreaming;
    PostedFormat posted_format_; // the format on its way, in kFormatPosted
    std::chrono::steady_clock::time_point last_post_time_ = std::chrono::steady_clock::now();
    StreamStats stats_;
    std::array<ibv_wc, 16> wcs_{};
    std::uint64_t credit_messages_ = 0; // credit_messages()
    bool device_removed_ = false;       // device_removed()
};

} // namespace rdmastream
