// SPDX-License-Identifier: LGPL-2.1-or-later
// A Sender with one receiver: every call passes straight to its FrameSender.
#include "stream/sender_impl.hpp"

#include "setup/busy_refuser.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace rdmastream {
namespace {

class SingleSender final : public Sender::Impl {
public:
    SingleSender(std::unique_ptr<FrameSender> tx, const SenderConfig& c, std::unique_ptr<DoorClaim> claim)
        : claim_(std::move(claim)), tx_(std::move(tx)) {
        if (claim_) busy_.emplace(claim_->listener(), "receiver " + tx_->peer());
        max_in_flight_ = c.max_in_flight;
    }

    std::shared_ptr<ibv_pd> pd() const override { return tx_->shared_pd(); }
    std::size_t depth(std::uint8_t flow) const noexcept override {
        if (!tx_->has_flow(flow)) return 0;
        std::size_t depth = tx_->ring(flow).slot_count;
        if (max_in_flight_ > 0) depth = std::min(depth, std::size_t{max_in_flight_});
        return depth + 1; // + the frame a live sender keeps pending
    }
    std::uint32_t max_payload(std::uint8_t flow) const noexcept override { return tx_->max_payload(flow); }
    // The receiver leaving is the stream's end, not an error (FrameSender
    // throws PeerLeft, inside the library only): each call that may learn
    // of it notes what it said and returns, and state() says kLeft.
    std::optional<std::uint64_t> send(std::span<const std::byte> payload, const FrameMemory::Impl& memory,
                                      const FrameMeta& meta, std::uint64_t cookie,
                                      std::chrono::milliseconds timeout) override {
        try {
            return tx_->send(payload, memory.lkey(0), meta, cookie, timeout); // one path: the domain's device 0
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
            return std::nullopt;
        }
    }
    void set_format(const StreamFormat& format, std::chrono::milliseconds timeout) override {
        try {
            tx_->set_format(format, timeout);
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
        }
    }
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) override {
        try {
            tx_->set_clock(anchor, timeout);
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
        }
    }
    void progress() override {
        try {
            tx_->progress();
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
        }
    }
    bool takes_frame_now(std::uint8_t flow) override {
        if (tx_->policy() == Policy::kLossless) {
            return true; // send() waits for a slot
        }
        progress(); // credits home; a frame kept pending takes a free slot before ours could
        // Left: send() says so, rather than the caller skipping frames for ever.
        return tx_->state() == SenderState::kLeft || tx_->credits_available(flow) > 0;
    }
    void skip_frame(std::uint8_t flow) noexcept override { tx_->skip_frame(flow); }
    bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) override {
        try {
            return tx_->wait_done(number, timeout, flow);
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
            return false;
        }
    }
    void finish(std::chrono::milliseconds timeout) override {
        try {
            tx_->finish(timeout);
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
        }
    }
    void stop() noexcept override { tx_->stop(); }
    StreamStats stats() const noexcept override { return tx_->stats(); }
    std::vector<ReceiverReport> receivers() const override { return {}; }
    SenderState state() const noexcept override { return tx_->state(); }
    std::string leaving() const override { return leaving_; }
    Policy policy() const noexcept override { return tx_->policy(); }
    std::string peer() const override { return tx_->peer(); }
    std::uint32_t ring_slots() const noexcept override { return tx_->ring().slot_count; }
    std::uint32_t ring_slot_size() const noexcept override { return tx_->ring().slot_size; }

private:
    std::unique_ptr<DoorClaim> claim_; // listening: kept, so later receivers hear "busy"
    std::optional<BusyRefuser> busy_;  // after claim_: it stops before the listener is given back
    std::unique_ptr<FrameSender> tx_;
    std::uint32_t max_in_flight_ = 0; // SenderConfig::max_in_flight
    std::string leaving_; // what PeerLeft said, once the receiver left
};

} // namespace

std::unique_ptr<Sender::Impl> single_sender(std::unique_ptr<FrameSender> tx, const SenderConfig& c,
                                            std::unique_ptr<DoorClaim> claim) {
    return std::make_unique<SingleSender>(std::move(tx), c, std::move(claim));
}

} // namespace rdmastream
