// SPDX-License-Identifier: LGPL-2.1-or-later
// A Sender to several receivers that dial in: a FanoutSender, which writes
// each frame to all of them from the same registered memory (one
// registration on the fan-out's PD: still no copy; with a second door on
// another device, one there too) and keeps the table of frames in flight
// itself.
#include "stream/sender_impl.hpp"

#include "stream/log_or_stderr.hpp"

#include "rdmastream/error.hpp"
#include "stream/fanout_sender.hpp"

#include <fmt/format.h>


namespace rdmastream {
namespace {

// Frames out at once when max_in_flight is not given: a receiver's default ring.
constexpr std::size_t kDefaultDepth = 8;

class FanoutSenderImpl final : public Sender::Impl {
public:
    FanoutSenderImpl(std::unique_ptr<DoorClaim> claim, const std::string& where, const SenderConfig& c)
        : // + the frame a live receiver keeps pending
          depth_((c.max_in_flight > 0 ? std::size_t{c.max_in_flight} : kDefaultDepth) + 1),
          where_(where),
          policy_(c.policy),
          claim_(std::move(claim)),
          fan_(claim_->listener(), member_options(c, depth_), log_or_stderr(c.log)) {
        fan_.set_max_receivers(c.max_receivers);
        fan_.set_member_timeout(c.member_timeout);
    }
    // Two doors: receivers' second paths come through `claim_b`'s. The
    // memory domain is made here, on door A's device and (if another) door
    // B's, so that every frame memory has a key on both.
    FanoutSenderImpl(std::unique_ptr<DoorClaim> claim, std::unique_ptr<DoorClaim> claim_b, const std::string& where,
                     const SenderConfig& c)
        : // twice: a two-path receiver's dead path holds its frames until its
          // RC retries run out, and the other path must not run out of the
          // caller's buffers meanwhile (as for one receiver over two paths)
          depth_(2 * (c.max_in_flight > 0 ? std::size_t{c.max_in_flight} : kDefaultDepth) + 1),
          where_(where),
          policy_(c.policy),
          claim_(std::move(claim)),
          claim_b_(std::move(claim_b)),
          fan_(claim_->listener(), claim_b_->listener(), member_options(c, depth_), two_path_config(c),
               log_or_stderr(c.log)) {
        fan_.set_max_receivers(c.max_receivers);
        fan_.set_member_timeout(c.member_timeout);
        domain = std::make_shared<MemoryDomain::Impl>(registrar(fan_.shared_pd()));
        if (fan_.device_b() != 0) domain->add_device(registrar(fan_.pd_b()));
    }

    // Waits for `count` receivers; false when the waker was woken first.
    bool wait_for(std::size_t count, std::chrono::milliseconds timeout) {
        try {
            return fan_.wait_for_receivers(count, timeout);
        } catch (const TimeoutError& e) {
            throw TimeoutError(fmt::format("{}: start the others (they dial {}), or wait for fewer receivers or "
                                           "longer",
                                           e.what(), where_));
        }
    }

    std::shared_ptr<ibv_pd> pd() const override { return fan_.shared_pd(); }
    std::size_t depth(std::uint8_t) const noexcept override { return depth_; } // each flow's
    std::uint32_t max_payload(std::uint8_t flow) const noexcept override { return fan_.max_payload(flow); }
    std::optional<std::uint64_t> send(std::span<const std::byte> payload, const FrameMemory::Impl& memory,
                                      const FrameMeta& meta, std::uint64_t cookie,
                                      std::chrono::milliseconds timeout) override {
        // Each member's path posts with its door's device's key. With no
        // receiver on_done fires in here.
        return fan_.send(payload, memory, meta, cookie, timeout);
    }
    void set_format(const StreamFormat& format, std::chrono::milliseconds timeout) override {
        fan_.set_format(format, timeout);
    }
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) override {
        fan_.set_clock(anchor, timeout);
    }
    void progress() override { fan_.progress(); }
    bool takes_frame_now(std::uint8_t flow) override { return fan_.can_take_frame(flow); }
    void skip_frame(std::uint8_t flow) noexcept override { fan_.drop_unoffered(flow); }
    bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) override {
        try {
            fan_.wait_done(number, timeout, flow);
            return true;
        } catch (const TimeoutError&) {
            throw TimeoutError(fmt::format(
                "a receiver has held frame {} for {} ms: it stopped taking frames (a stuck lossless receiver "
                "holds every other one back); give it the live policy, or wait longer",
                number, timeout.count()));
        }
    }
    void finish(std::chrono::milliseconds timeout) override {
        fan_.finish(timeout);
        state_ = SenderState::kEnded;
    }
    void stop() noexcept override {
        fan_.stop();
        state_ = SenderState::kStopped;
    }
    StreamStats stats() const noexcept override { return fan_.stats(); }
    std::vector<ReceiverReport> receivers() const override {
        std::vector<ReceiverReport> out;
        for (auto& r : fan_.receiver_stats()) {
            out.push_back({std::move(r.peer), r.stats, r.policy, r.left, std::move(r.paths)});
        }
        return out;
    }
    SenderState state() const noexcept override { return state_; }
    std::string leaving() const override { return {}; } // its receivers leave one by one, each logged
    Policy policy() const noexcept override { return policy_; }
    std::string peer() const override { return where_; }
    std::uint32_t ring_slots() const noexcept override { return 0; }
    std::uint32_t ring_slot_size() const noexcept override { return 0; }

private:
    // Every member's writes are signalled often enough for the frames the
    // caller keeps out, whatever its ring.
    static SenderOptions member_options(const SenderConfig& c, std::size_t depth) {
        SenderOptions o = sender_options(c);
        o.caller_depth = static_cast<std::uint32_t>(depth - 1); // the live pending frame is never posted
        return o;
    }
    // A two-path receiver's sender: its paths' failures its own (no wait
    // for an rdma_cm event to explain one, as for a Sender over two paths).
    static SenderConfig two_path_config(const SenderConfig& c) {
        SenderConfig t = c;
        t.receivers = 0;
        return t;
    }
    static PageRegistrar registrar(std::shared_ptr<ibv_pd> pd) {
        return [pd = std::move(pd)](std::span<std::byte> pages, std::size_t locked) {
            return register_pages(pd, pages, locked, 0); // read by the NIC only
        };
    }

    std::size_t depth_;
    std::string where_;
    Policy policy_; // the fan-out's own; a receiver may ask for live for itself
    std::unique_ptr<DoorClaim> claim_;   // the listener, held while the fan-out admits on it
    std::unique_ptr<DoorClaim> claim_b_; // door B's, if any
    FanoutSender fan_;                   // after the claims: goes first
    SenderState state_ = SenderState::kStreaming;
};

} // namespace

std::unique_ptr<Sender::Impl> fanout_sender(std::unique_ptr<DoorClaim> claim, const std::string& where,
                                            const SenderConfig& c) {
    auto f = std::make_unique<FanoutSenderImpl>(std::move(claim), where, c);
    if (!f->wait_for(c.receivers, c.open_timeout)) return nullptr;
    return f;
}

std::unique_ptr<Sender::Impl> fanout_sender(std::unique_ptr<DoorClaim> claim, std::unique_ptr<DoorClaim> claim_b,
                                            const std::string& where, const SenderConfig& c) {
    auto f = std::make_unique<FanoutSenderImpl>(std::move(claim), std::move(claim_b), where, c);
    if (!f->wait_for(c.receivers, c.open_timeout)) return nullptr;
    return f;
}

} // namespace rdmastream
