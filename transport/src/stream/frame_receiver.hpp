// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiving end of one stream: owns the ring, hands out frames as they
// complete, takes them back in any order and returns their credits.
//
// Credits are coalesced: release() only notes the slot; the credits go out
// together in one kCredits SEND when the receiver next looks at its CQ (in
// wait_frame/next) or once a quarter of the ring is waiting, whichever comes
// first, so a consumer releasing several frames between two looks costs one
// message, and a freed slot's credit never waits for more than that look.
//
// Thread rule: one thread drives a FrameReceiver (wait_frame/next/release/
// stats); RingConfig::waker may be woken from any thread.
#pragma once

#include "datapath/datapath.hpp"
#include "rdmastream/frame.hpp"
#include "rdmastream/receiver.hpp" // the limits' defaults
#include "stream/opening.hpp"
#include "wire/handshake.hpp"
#include "wire/peer_auth.hpp"
#include "setup/rc_connection.hpp"
#include "setup/listener.hpp"
#include "memory/registered_region.hpp"
#include "datapath/slot_credits.hpp"
#include "memory/slot_ring.hpp"
#include "rdmastream/stream_states.hpp"
#include "rdmastream/stream_stats.hpp"
#include "rdmastream/waker.hpp"
#include "wire/wire.hpp"
#include "wire/work_id.hpp"

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream {

struct RingConfig {
    std::uint32_t slots = 8;
    std::uint32_t slot_size = 4u << 20; // header included
    PollMode poll_mode = PollMode::kEvent;
    std::string device; // RDMA device by name; empty: the one the route picks
    bool live = false;  // ask the sender to drop frames rather than wait for this receiver
    // Interrupts wait_frame() from any thread (a slot freed downstream,
    // unlock, Ctrl-C); empty: nothing interrupts it but the timeout.
    std::shared_ptr<Waker> waker;
    // (Last, so positional initialisers of the fields above stay valid.)
    // The receiver decides what it pins, whatever RLIMIT_MEMLOCK allows
    // (often unlimited): a stream format whose frames exceed
    // max_frame_bytes, or whose frames would grow the ring (slots x slot
    // size) past max_ring_bytes, is refused with a UserError naming the
    // limit. The ring this config asks for must itself fit max_ring_bytes.
    std::uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
    std::uint64_t max_ring_bytes = kDefaultMaxRingBytes;
    // A pre-shared key the sender must prove before it learns where the
    // ring is (handshake.hpp); null: no authentication, and a sender with a
    // key refuses this receiver.
    std::shared_ptr<const PresharedKey> key;
    // A listening receiver's bound on a connected sender's key proof: a
    // sender silent after connecting is refused after it, and the next one
    // served (the CLI's --handshake-timeout, rdmasrc's handshake-timeout).
    std::chrono::milliseconds handshake_timeout = Handshake::kPatience;
    // A type 2 memory window per slot, bound while the sender holds the
    // slot's credit (slot_ring.hpp): the NIC refuses a write into a slot
    // the consumer holds. Off by default (rdmarecv --memory-windows, rdmasrc
    // memory-windows=true turn it on): on the bed's rxe a lossy wire (0.1 %
    // loss is enough) stalls a stream with windows: rxe 6.1 runs a bind
    // again when it retransmits a SEND queued before it, the second bind
    // fails, and nothing on the queue completes after it (docs/security.md,
    // bench/mw_stall_probe.cpp). Off, or on a device without type 2 windows, the
    // ring is one REMOTE_WRITE region and a write into a held slot is only
    // noticed once it has landed.
    bool memory_windows = false;
    // Told the one warning a receiver may give (windows asked for, the
    // device has none); empty: stderr.
    std::function<void(const std::string&)> warn;
    // A stream's flows after the first (a programme's audio and data): each
    // gets flow_slots slots when its first format arrives, as large as that
    // format's frames; a format for flow max_flows or above is refused.
    // max_ring_bytes counts every flow's slots together. The connection's
    // queues and buffers are sized for every flow at once (slot_capacity).
    std::uint32_t flow_slots = 16;
    std::uint32_t max_flows = 8;
    // How long a failed completion waits for the rdma_cm event that may
    // explain it (the sender hung up) before it is reported; 0 for one path
    // of two, whose wait would hold the other path's frames.
    std::chrono::milliseconds hang_up_wait{200};
};

// Slots a receiver with `config` may have in all, every flow's together:
// what its queues and per-slot tables are sized for.
std::uint32_t slot_capacity(const RingConfig& config) noexcept;

class FrameReceiver {
public:
    // Waits for one sender on `listener` (many may be on their way at
    // once: stream/pending_peers.hpp; the first through its handshake is
    // taken), registers the ring on its connection and sends the ring
    // advert. nullptr once the ring's waker is woken; TimeoutError after
    // `timeout`, naming `where` (default: the listener's port).
    static std::unique_ptr<FrameReceiver> accept(Listener& listener, const RingConfig& ring,
                                                 std::chrono::milliseconds timeout, const std::string& where = {});
    // Connects to a listening sender, retrying while it is not up yet;
    // nullptr once the config's waker is woken between two tries.
    static std::unique_ptr<FrameReceiver> connect(const Endpoint& sender, const RingConfig& ring,
                                                  std::chrono::milliseconds patience);
    // How a FrameReceiver opens a connection (stream/opening.hpp), for a
    // caller that opens it itself (two paths: it keeps the founding
    // connection's session secret, and joins).
    static OpeningPlan opening_plan(const RingConfig& ring);
    // A FrameReceiver over a connection through its handshake: the ring
    // registered on it and announced.
    static std::unique_ptr<FrameReceiver> over(Opening opening, const RingConfig& ring);
    // Registers the ring (flow 0's slots) on `path` (over verbs: a
    // connection through its handshake; or the tests' in-memory fabric) and
    // posts its receives. `sender_max_slots`: the most the sender takes, every
    // flow's together (its hello said).
    FrameReceiver(std::unique_ptr<Datapath> path, const RingConfig& config,
                  std::uint32_t sender_max_slots = wire::kMaxSlots);
    FrameReceiver(const FrameReceiver&) = delete;
    FrameReceiver& operator=(const FrameReceiver&) = delete;
    // Hangs up and stops the QP (the NIC lets go of the ring and every
    // buffer) before the ring's registration goes: a sender mid-write then
    // learns the receiver left (a disconnect), not a remote access error.
    ~FrameReceiver();
    // This receiver has every frame it wants (a frame count reached, its
    // pipeline stopped): tells the sender so (kLeaving), waits up to a
    // second for the sender's NIC to acknowledge it, and hangs up. The
    // sender then ends its stream as a success (PeerLeft), not as a lost
    // receiver. Only the destructor may follow. Never throws: a connection
    // already gone has nobody to tell.
    void leave() noexcept;

    // What wait_frame() found.
    struct Arrival {
        enum Kind { kFrame, kEnd, kWoken };
        Kind kind = kWoken;
        ReceivedFrame frame; // kFrame
    };
    // The next frame; kEnd at end of stream (the sender said so); kWoken as
    // soon as the config's waker is woken. Throws ConnectionError on a failed
    // completion or the sender going away without ending the stream,
    // ProtocolError on a protocol violation, and TimeoutError when nothing
    // (no frame, no keepalive) came from the sender for `idle`, counted
    // from the last thing it sent, so wakes do not extend it and
    // keepalives do.
    Arrival wait_frame(std::chrono::milliseconds idle);
    // wait_frame() in steps, for a caller that waits on several receivers
    // at once (two paths: stream/path_receiver.hpp) with one PathWait:
    //   take()       what needs no wait: a frame, the end, or nullopt (then
    //                every completion is handled and released credits are
    //                flushed: wait on datapath());
    //   completions() where that wait writes completions (after take() said nullopt);
    //   waited()     what the wait found (completions written, or a
    //                connection event: a hang-up after the end, else the
    //                ConnectionError that says what it means);
    //   silent_at()  when wait_frame(idle) would give up on a silent sender,
    //                and silent() throws that TimeoutError.
    // wait_frame() is exactly these steps with the datapath's own wait.
    std::optional<Arrival> take();
    Datapath& datapath() noexcept { return *path_; }
    std::span<ibv_wc> completions() noexcept;
    void waited(const Waited& w);
    std::chrono::steady_clock::time_point silent_at(std::chrono::milliseconds idle) const noexcept;
    [[noreturn]] void silent(std::chrono::milliseconds idle) const;
    // A sender on probation (a listener's new peer): until its first frame,
    // wait_frame() throws TimeoutError at `by` whatever it sent before
    // (keepalives included), so a peer that connects and never streams
    // cannot hold a listener. Default: no such bound.
    void first_frame_by(std::chrono::steady_clock::time_point by) noexcept { first_frame_by_ = by; }
    // wait_frame() for a caller with nothing to do on a wake: the next frame,
    // or nullopt at end of stream.
    std::optional<ReceivedFrame> next(std::chrono::milliseconds idle);
    // The consumer is done with a frame: its slot's credit goes back to the
    // sender (coalesced, see above). Never blocks.
    void release(std::uint16_t slot);

    const StreamStats& stats() const noexcept { return stats_; }
    // Where the stream is (stream_states.hpp): tests, and messages.
    ReceiverState state() const noexcept { return state_; }
    // The config, its slot_size flow 0's as it is now (grown or not).
    const RingConfig& ring() const noexcept { return config_; }
    bool huge_pages() const noexcept { return flows_[0].ring->huge_pages(); }
    // Whether the ring has memory windows (asked for, and the device has them).
    bool memory_windows() const noexcept { return windows_; }
    // The connection failed because its RDMA device is going away
    // (RDMA_CM_EVENT_DEVICE_REMOVAL): the device can go, and come back, only
    // once this receiver (its ring's registration, its connection) is gone.
    bool device_removed() const noexcept { return device_removed_; }
    // A flow's format in force (Receiver::format); nullptr: none.
    const StreamFormat* format(std::uint8_t flow) const noexcept {
        return flow < flows_.size() && flows_[flow].format ? &*flows_[flow].format : nullptr;
    }
    // The sender's address ("198.18.0.2:40123"), for messages.
    std::string peer() const { return path_->peer_name(); }
    // The RDMA device the connection runs on ("rxe0").
    std::string device() const { return path_->device_name(); }
    // What the sender must know of a flow's slots: the last step of the
    // handshake sends flow 0's (announce_ring), once the sender proved the
    // key. With windows, each slot's key is its window's, bound when the
    // slots were registered.
    wire::RingAdvert ring_advert(std::uint8_t flow = 0) const;
    // Sends a flow's ring advert to the sender (a kRing message): flow 0's
    // right after the handshake is through, before anything else; another
    // flow's when its first format came (take_format); and a flow's again
    // each time a format's frames outgrow its slots.
    void announce_ring(std::uint8_t flow = 0);

private:
    // A FrameReceiver over verbs on a connection through its handshake.
    static std::unique_ptr<FrameReceiver> over(std::unique_ptr<VerbsDatapath> path, const RingConfig& config,
                                               std::uint32_t sender_max_slots);
    // Credit messages that may be in flight at once; every half of them is
    // signalled, so a buffer is free again by the time it comes round.
    static constexpr std::uint64_t kCreditBuffers = 8;
    void post_recv(std::uint64_t wr_id);
    // A kFormat message in control buffer `buffer`: adopt it, growing the
    // ring first if its frames outgrow the slots.
    void take_format(std::uint64_t buffer, std::uint32_t length);
    void take_clock(std::uint64_t buffer, std::uint32_t length); // the anchor frames after it are on
    // A flow's slots: `count` of `slot_size` bytes, registered, numbered
    // from total_slots_ on (a new flow) or where they were (a flow whose
    // slots grow: nothing of it held), their receives posted (a new flow)
    // and, with windows, bound.
    void register_flow(std::uint8_t flow, std::uint32_t count, std::uint32_t slot_size);
    // With windows: binds every window of a flow's slots (fresh slots: the
    // sender holds every credit), before its ring advert goes out.
    void bind_all(std::uint8_t flow);
    // A format for a flow that has no slots yet: its slots, within the
    // limits (UserError naming the one it passes).
    void add_flow(const wire::StreamFormat& f);
    std::uint64_t ring_bytes_but(std::uint8_t flow) const noexcept; // every other flow's slots, in bytes
    // Re-posts the receives of released frames and sends their credits in
    // one message, if a credit buffer is free (else at a later look).
    void flush_credits();
    // One completion: what the sender sent goes into arrived_, in order.
    void on_completion(const ibv_wc& wc);
    // The oldest arrival, if it is ready (a frame: its window is
    // invalidated): a frame handed out, or a control message acted on.
    std::optional<ReceivedFrame> next_arrived();
    ReceivedFrame hand_out(const ibv_wc& wc); // a frame's checks, once nothing can write its slot
    // on_completion() and next_arrived(), with the sender's address added to a ProtocolError.
    void checked_on_completion(const ibv_wc& wc);
    std::optional<ReceivedFrame> checked_next_arrived();
    // The connection is gone (an rdma_cm event): throws ConnectionError saying what it means.
    [[noreturn]] void lost(const CmEvent& ev);
    void mark_failed() noexcept; // kFailed, unless the stream had already ended one way or another
    // After the end of stream, until the sender hangs up (at most a
    // second): the connection stays up so that its NIC still acknowledges
    // what the sender sends. The sender's end-of-stream message may have
    // arrived while its ack was lost on the wire; hanging up at once would
    // leave the sender's retransmits unanswered, and it would fail with
    // "transport retry counter exceeded" after a stream delivered whole.
    void linger_for_hang_up() noexcept;
    bool end_arrived() const noexcept {
        return state_ == ReceiverState::kEndArrived || state_ == ReceiverState::kEnded;
    }
    // A failed completion (of work request `work`): throws (ConnectionError,
    // or ProtocolError for what the sender did wrong), naming the
    // sender's hang-up if that is what caused it.
    [[noreturn]] void failed(const ibv_wc& wc, Work work);
    // "the NIC refused a write (or read) of the sender's outside its
    // credits ...; it held no credit for slot 0 (...)": the refusal's text.
    std::string refused_request() const;
    RingConfig config_;
    std::unique_ptr<Datapath> path_;       // declared before what lives on it
    RcConnection* conn_ = nullptr;         // set-up over verbs (accept, connect); null over another datapath
    bool windows_;                         // memory windows (RingConfig::memory_windows, and the device has them)
    // Slots every flow's together may number (queues, buffers and tables
    // are sized for it once), and how many they number now.
    std::uint32_t capacity_;
    std::uint32_t total_slots_ = 0;
    // One per flow id: its slots (none until its first format), numbered
    // base..base+ring->slot_count()-1 in the ring's one numbering, and what
    // the sender told of it.
    struct Flow {
        std::unique_ptr<SlotRing> ring; // replaced when the flow's slots grow
        std::uint32_t base = 0;
        std::optional<wire::StreamFormat> format;
        bool format_changed = false;
        std::uint64_t frames = 0;        // handed out
        std::uint64_t last_sequence = 0; // the latest frame's number (once frames > 0)
    };
    std::array<Flow, kMaxFlows> flows_;
    std::vector<std::uint8_t> flow_of_slot_; // by slot number: its flow
    RegisteredRegion control_in_;          // one kControlPayloadMax buffer per posted receive
    RegisteredRegion control_out_;         // the receiver's own control messages (a ring advert)
    // kCreditBuffers buffers of slots * kCreditSize bytes: a credit message's
    // buffer is reused only after the NIC is done with it (credit_acked_).
    RegisteredRegion credit_out_;
    ReceiverSlots slots_;
    StreamStats stats_;
    std::uint64_t last_arrival_ns_ = 0; // the last frame's, for stats_.max_gap
    bool device_removed_ = false;       // device_removed()
    std::array<ibv_wc, 16> wcs_{};
    std::size_t wc_next_ = 0, wc_count_ = 0;
    std::chrono::steady_clock::time_point last_heard_; // the sender's last message or frame
    std::chrono::steady_clock::time_point first_frame_by_ = std::chrono::steady_clock::time_point::max();
    // Released, not yet credited: the credits and the receives to re-post.
    // Sized to the slot count once; never grows.
    std::vector<wire::Credit> credit_batch_;
    std::vector<ibv_send_wr> bind_batch_; // with windows: their binds, linked in front of the credit SEND
    std::vector<ibv_recv_wr> recv_batch_;
    std::vector<ibv_sge> recv_sges_;
    std::size_t batched_ = 0;
    std::size_t flush_at_;               // a quarter of the ring
    std::uint64_t credit_msgs_ = 0;      // credit messages posted
    std::uint64_t credit_acked_ = 0;     // credit messages the NIC completed (signalled ones retire the earlier)
    std::uint32_t signal_every_;
    ReceiverState state_ = ReceiverState::kStreaming;
    bool sender_hung_up_ = false; // it did, after ending the stream (linger_for_hang_up)
    std::vector<std::uint64_t> recv_of_slot_; // the receive (and buffer) the frame in a slot used
    // What the sender sent that must be acted on in order: frames (with
    // windows, each waits for its window's invalidation, posted when it
    // arrived) and the format and end-of-stream messages behind them. A
    // fixed ring of completions: at most one frame per slot and one message
    // per posted receive.
    std::vector<ibv_wc> arrived_;
    std::size_t arrived_head_ = 0, arrived_count_ = 0;
    std::vector<std::uint8_t> invalidated_; // by slot: the window of the frame in it is invalidated
    std::optional<ClockAnchor> clock_; // the sender's latest; none until it sends one
    // By slot: the checked side data entries of the frame in it (the spans
    // point into the ring), for ReceivedFrame::side_data.
    std::vector<std::array<SideData, kMaxSideDataEntries>> side_of_slot_;
};

} // namespace rdmastream
