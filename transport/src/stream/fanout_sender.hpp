// SPDX-License-Identifier: LGPL-2.1-or-later
// One stream to many receivers: every receiver dials the sender's listener
// and gets its own connection, ring, credits and policy; each frame is
// written from the same registered memory to all of them (one registration
// on a protection domain they share: still no copy).
//
// A receiver may join at any time and gets the stream's formats (every
// flow's, flow by flow: its slots for each come with it), then the next
// frame of each flow. Frame numbers are the stream's, per flow. A receiver that fails, leaves or stays stuck past the member
// timeout is dropped with a message naming it; the others go on. A live receiver (its own ask,
// or the sender's policy) never holds the others back; a lossless one paces
// the stream, by definition.
//
// Two paths (docs/design/two-paths.md, step 10): with a second door, a
// receiver that dials both joins over two. Its first connection comes
// through door A as any receiver's; its second, through door B, joins with
// its session token (refused unless a receiver here has it), and a
// two-path sender takes the receiver over from then on (fanout_member.hpp):
// each frame posted on both paths, a path lost and back costing it no frame.
// A receiver over one path and one over two share the stream.
//
// Thread rule: one thread drives a FanoutSender; on_done and the log run on it.
#pragma once

#include "stream/fanout_member.hpp"
#include "stream/frame_sender.hpp"
#include "stream/pending_peers.hpp"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream {

class FanoutSender {
public:
    using LogFn = std::function<void(const std::string&)>;

    // `opts.on_done` fires once per frame, when no receiver needs its memory
    // any more (kDelivered if at least one receiver got it).
    FanoutSender(Listener& listener, const SenderOptions& opts, LogFn log);
    // With a second door: `listener_b` takes receivers' second paths;
    // `two_paths` is what a receiver's two-path sender is made with (its
    // waker, poll mode, max_in_flight; on_done and log are the fan-out's).
    FanoutSender(Listener& listener, Listener& listener_b, const SenderOptions& opts, const SenderConfig& two_paths,
                 LogFn log);
    ~FanoutSender();
    FanoutSender(const FanoutSender&) = delete;
    FanoutSender& operator=(const FanoutSender&) = delete;

    // Register frame memory here: every receiver's connection through door
    // A uses this PD, the memory domain's device 0; through door B, pd_b()
    // (device_b(): 0 when door B is on the same device).
    ibv_pd* pd() const noexcept { return pd_.get(); }
    std::shared_ptr<ibv_pd> shared_pd() const noexcept { return pd_; }
    std::shared_ptr<ibv_pd> pd_b() const noexcept { return pd_b_; }
    std::size_t device_b() const noexcept { return pd_b_ == pd_ ? 0 : 1; }

    // Admits receivers waiting to join and moves joiners on (handshake,
    // format); never blocks. Returns how many joined the stream. With nobody
    // joining it costs a clock read (vDSO), and one poll(2) of the listener
    // every kListenerLook: no syscall per frame at rates above 100 frames/s.
    // The listener is only read when it holds a request (each accept lists
    // the devices when one is named: once per joiner, not per frame);
    // receivers in their handshakes move on at the same looks, a few
    // syscalls each, never per frame.
    std::size_t admit();
    // Waits up to `timeout` until at least `count` receivers are connected;
    // TimeoutError after it; false once the options' waker is woken first.
    bool wait_for_receivers(std::size_t count, std::chrono::milliseconds timeout);
    std::size_t receivers() const noexcept { return members_.size(); }
    // At most this many receivers at once, joiners and pending handshakes
    // included (default: kDefaultMaxReceivers); one more is refused "busy"
    // at its connect request, before anything is allocated for it. How many
    // may be on their way at once, and from one address, is the listener's
    // (Listener::pending_limits()).
    void set_max_receivers(std::size_t n) noexcept { max_receivers_ = n; }
    static constexpr std::size_t kDefaultMaxReceivers = 64;
    // How long one receiver may hold the stream back: a lossless receiver
    // that returns no credit (or a live one that acknowledges nothing) for
    // this long is cut, with a message naming it, and the others go on at
    // their own rate. send(), set_format() and finish() wait at most this
    // long for any one receiver, whatever their own timeout.
    void set_member_timeout(std::chrono::milliseconds t) noexcept { member_timeout_ = t; }
    static constexpr std::chrono::milliseconds kDefaultMemberTimeout{5000};
    // The largest frame of a flow every receiver's slots take now.
    std::uint32_t max_payload(std::uint8_t flow = 0) const noexcept;

    // Offers the frame (of flow meta.flow, its format announced; flow 0 may
    // go without one) to every receiver (admitting new ones first). With no
    // receiver connected the frame is dropped at once. Returns the frame's
    // number in its flow. A receiver whose slots the frame does not fit is dropped, as
    // one that fails (the log names both sizes): a frame that fits no
    // receiver's slots leaves none, and is dropped. Receivers' errors never
    // reach the caller (each costs only its receiver). A wake of the
    // options' waker does not end it: every receiver takes the frame.
    std::uint64_t send(std::span<const std::byte> payload, const FrameMemory::Impl& memory, const FrameMeta& meta,
                       std::uint64_t cookie, std::chrono::milliseconds timeout);
    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout);
    // Every receiver's, and each joiner's once it holds the format.
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout);
    // Admits joiners, then services every receiver (credits, completions,
    // keepalives). Never blocks.
    void progress();
    // Whether send() would post a frame now to at least one receiver: a
    // lossless one (send() waits for its slot) or a live one with a free
    // slot. Services the receivers first when it must look at credits. A
    // caller that has to write a frame before offering it (a copy) asks
    // first, so that it never writes a frame every receiver would drop.
    bool can_take_frame(std::uint8_t flow = 0);
    // Counts a frame the caller dropped without offering it, because
    // can_take_frame() said no: it is in stats().drops, and every receiver
    // sees its number as a gap.
    void drop_unoffered(std::uint8_t flow = 0) noexcept;
    // Returns once frame `number` of `flow` has its memory free: every receiver it went
    // to is done with it, and on_done has fired. Waits on the receivers
    // that still hold it (each wait woken by its own completions, at most
    // the member timeout: a stuck receiver is cut and the frame is free of
    // it); TimeoutError after `timeout`.
    void wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow = 0);
    // Ends the stream for every receiver.
    void finish(std::chrono::milliseconds timeout);
    // Stops every receiver's connection at once (joiners' too); frames still
    // out come back through on_done as dropped. Nothing but the destructor
    // may follow (the reports list only receivers dropped before).
    void stop() noexcept;

    // Per-receiver stats, for reports.
    struct ReceiverStats {
        std::string peer;
        StreamStats stats;
        Policy policy;
        bool left = false; // dropped mid-stream (failed, left or stuck): stats up to then
        std::vector<PathReport> paths; // over two paths: each one's (as it was when it left)
    };
    std::vector<ReceiverStats> receiver_stats() const;
    // Frames offered; drops: frames no receiver got (every one dropped it,
    // or none was connected, or the caller dropped it unoffered).
    const StreamStats& stats() const noexcept { return stats_; }

private:
    struct Member {
        std::unique_ptr<FanoutMember> sender;
        std::string peer;
        std::shared_ptr<const SessionSecret> secret; // with door B: the one its second path proves
    };
    // A receiver through its handshake, not yet holding the stream's
    // formats. Gets no frames until it is a Member. (Before its handshake it
    // is one of pending_'s, within the listener's pending limits.)
    struct Joiner {
        std::unique_ptr<FrameSender> sender;
        std::string peer;
        std::chrono::steady_clock::time_point deadline;
        std::array<std::uint16_t, kMaxFlows> format_ids{}; // each flow's format posted to it, 0: none yet
        bool format_posted = false; // one was: wait until it settles before the next
        std::uint32_t clock_sent = 0; // clock_generation_ when its clock anchor went out; 0: none
        std::shared_ptr<const SessionSecret> secret; // with door B
    };
    // A receiver's handshake, and then its format, each within this.
    static constexpr std::chrono::seconds kJoinPatience{5};
    // How often admit() looks at the listener and the pending handshakes:
    // a joiner waits at most this long to be noticed, against a handshake of
    // several round trips; the same period FrameSender looks for hang-ups.
    static constexpr std::chrono::milliseconds kListenerLook{10};
    bool look_due();          // at most every kListenerLook: a clock read
    static bool readable(const Listener& listener); // one poll(2), no wait
    void accept_requests();   // the requests the listener holds go pending, within the limits
    void accept_joins();      // door B's: second paths, screened by the members' tokens
    void take(Opening o);     // a connection through its handshake: a joiner, or a member's path back
    void join_path(Opening o, std::size_t device); // a member's other path
    StreamSoFar so_far() const;
    void collect_secrets(); // secrets_, from the members' and joiners'
    // Made with a second door (whether or not door B still listens).
    bool two_doors() const noexcept { return plan_.joins_any != nullptr; }
    void depart(Member& m, bool left); // into departed_
    std::size_t advance_joiners(); // returns how many joined the stream
    bool advance(Joiner& j); // true once j may take frames; throws if it failed
    bool has_lossless_member() const noexcept;
    bool member_has_free_slot(std::uint8_t flow); // current after progress()
    // The fan-out's one table of frames in flight: a frame's memory is free
    // once every receiver it went to is done with it (each member's own
    // FrameSender tracks its writes; the caller's cookie lives only here).
    struct SharedFrame {
        std::uint64_t number = 0;
        std::uint64_t cookie = 0;
        std::uint32_t holders = 0; // receivers still holding it, plus send()'s own hold while it hands it out
        bool delivered = false;
    };
    static constexpr std::size_t kSharedFrames = 2 * FrameSender::kMaxSlots + 4;
    bool frame_free(std::uint8_t flow, std::uint64_t number) const noexcept;
    // A member's cookie for a frame: its flow in the top byte, its number below.
    static std::uint64_t token_of(std::uint8_t flow, std::uint64_t number) noexcept {
        return std::uint64_t{flow} << 56 | number;
    }

    template <typename Fn>
    void for_each_member(Fn&& fn); // runs fn on each, dropping any that throws
    void member_done(std::uint64_t token, FrameFate fate); // one holder let go of the frame (token_of)
    SenderOptions member_options(); // once, for member_opts_

    Listener& listener_;
    Listener* listener_b_ = nullptr; // door B's, if any
    SenderOptions opts_;
    LogFn log_;
    std::shared_ptr<ibv_pd> pd_, pd_b_; // pd_b_: door B's device's (pd_ when the same)
    SenderOptions member_opts_;   // made once: admit() must not copy options per frame
    SenderOptions member_opts_b_; // door B's connections: on pd_b_
    SenderConfig two_paths_;      // a two-path member's (on_done and log the fan-out's)
    // The session secrets of the members, for the joins' screens (made
    // again whenever a door holds a request: never per frame).
    std::vector<std::shared_ptr<const SessionSecret>> secrets_;
    OpeningPlan plan_;          // how a receiver's connection opens (member_opts_'s)
    OpeningPlan plan_b_;        // door B's: joins only
    PendingPeers pending_;      // receivers on their way through their handshakes
    std::unique_ptr<PendingPeers> pending_b_; // second paths on their way
    std::chrono::steady_clock::time_point next_listener_look_{};
    // By flow (a flow's table made with its first format; flow 0's at
    // once), then number % kSharedFrames.
    std::array<std::vector<SharedFrame>, kMaxFlows> shared_;
    std::vector<std::unique_ptr<Member>> members_;
    std::vector<std::unique_ptr<Joiner>> joining_;
    // A receiver's second path through its handshake before its first is a
    // member (it took the stream's format yet): attached once it is.
    struct EarlyPath {
        Opening opening;
        std::size_t device = 0;
        // Whether it is the second path of the receiver with `secret`.
        bool of(const std::shared_ptr<const SessionSecret>& secret) const {
            return secret && opening.handshake->join()->secret == secret;
        }
    };
    std::vector<std::unique_ptr<EarlyPath>> early_paths_;
    std::vector<ReceiverStats> departed_; // members dropped so far, for the reports
    std::array<std::optional<wire::StreamFormat>, kMaxFlows> formats_;
    std::optional<ClockAnchor> clock_;
    std::uint32_t clock_generation_ = 0; // +1 per set_clock, so a joiner sent an older anchor gets the new one
    std::array<std::uint64_t, kMaxFlows> next_number_{}; // per flow: frames offered
    std::size_t max_receivers_ = kDefaultMaxReceivers;
    std::chrono::milliseconds member_timeout_ = kDefaultMemberTimeout;
    StreamStats stats_;
};

} // namespace rdmastream
