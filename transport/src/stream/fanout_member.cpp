// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/fanout_member.hpp"

#include "stream/peer_left.hpp"

#include <stdexcept>

namespace rdmastream {
namespace {

class OnePathMember final : public FanoutMember {
public:
    OnePathMember(std::unique_ptr<FrameSender> tx, std::size_t device) : tx_(std::move(tx)), device_(device) {}

    bool send(std::span<const std::byte> payload, const FrameMemory::Impl& memory, const FrameMeta& meta,
              std::uint64_t token, std::chrono::milliseconds timeout) override {
        return tx_->send(payload, memory.lkey(device_), meta, token, timeout).has_value();
    }
    std::uint32_t max_payload(std::uint8_t flow) const noexcept override { return tx_->max_payload(flow); }
    bool has_flow(std::uint8_t flow) const noexcept override { return tx_->has_flow(flow); }
    bool has_free_slot(std::uint8_t flow) override { return tx_->has_flow(flow) && tx_->credits_available(flow) > 0; }
    void skip_frame(std::uint8_t flow) noexcept override { tx_->skip_frame(flow); }
    void progress() override { tx_->progress(); }
    void wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) override {
        tx_->wait_done(number, timeout, flow);
    }
    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) override {
        tx_->set_format(format, timeout);
    }
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) override {
        tx_->set_clock(anchor, timeout);
    }
    void finish(std::chrono::milliseconds timeout) override { tx_->finish(timeout); }
    StreamStats stats() const override { return tx_->stats(); }
    Policy policy() const noexcept override { return tx_->policy(); }

    std::unique_ptr<FrameSender> take() { return std::move(tx_); }
    std::size_t device() const noexcept { return device_; }

private:
    std::unique_ptr<FrameSender> tx_;
    std::size_t device_;
};

// A two-path sender's calls swallow the receiver's leaving (its state says
// so); the fan-out learns it as from a FrameSender, by PeerLeft.
class TwoPathMember final : public FanoutMember {
public:
    explicit TwoPathMember(std::unique_ptr<Sender::Impl> s) : s_(std::move(s)) {}

    bool send(std::span<const std::byte> payload, const FrameMemory::Impl& memory, const FrameMeta& meta,
              std::uint64_t token, std::chrono::milliseconds timeout) override {
        const bool taken = s_->send(payload, memory, meta, token, timeout).has_value();
        check_left();
        return taken;
    }
    std::uint32_t max_payload(std::uint8_t flow) const noexcept override { return s_->max_payload(flow); }
    bool has_flow(std::uint8_t flow) const noexcept override { return s_->depth(flow) > 0; }
    bool has_free_slot(std::uint8_t flow) override {
        const bool free = s_->depth(flow) > 0 && s_->takes_frame_now(flow);
        check_left();
        return free;
    }
    void skip_frame(std::uint8_t flow) noexcept override { s_->skip_frame(flow); }
    void progress() override {
        s_->progress();
        check_left();
    }
    void wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) override {
        s_->wait_done(number, timeout, flow);
        check_left();
    }
    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) override {
        s_->set_format(format, timeout);
        check_left();
    }
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) override {
        s_->set_clock(anchor, timeout);
        check_left();
    }
    void finish(std::chrono::milliseconds timeout) override {
        s_->finish(timeout);
        check_left();
    }
    StreamStats stats() const override { return s_->stats(); }
    Policy policy() const noexcept override { return s_->policy(); }

    Sender::Impl& sender() noexcept { return *s_; }
    const Sender::Impl& sender() const noexcept { return *s_; }

private:
    void check_left() const {
        if (s_->state() == SenderState::kLeft) throw PeerLeft(s_->leaving());
    }

    std::unique_ptr<Sender::Impl> s_;
};

} // namespace

std::unique_ptr<FanoutMember> one_path_member(std::unique_ptr<FrameSender> tx, std::size_t device) {
    return std::make_unique<OnePathMember>(std::move(tx), device);
}

std::unique_ptr<FanoutMember> two_path_member(std::unique_ptr<FanoutMember> one, const StreamSoFar& so_far,
                                              const SenderConfig& c) {
    auto& member = dynamic_cast<OnePathMember&>(*one);
    const std::size_t device = member.device();
    return std::make_unique<TwoPathMember>(two_path_sender_at(member.take(), device, so_far, c));
}

bool has_two_paths(const FanoutMember& member) noexcept {
    return dynamic_cast<const TwoPathMember*>(&member) != nullptr;
}

void attach_member_path(FanoutMember& member, std::size_t path, std::unique_ptr<FrameSender> tx, std::size_t device) {
    auto* two = dynamic_cast<TwoPathMember*>(&member);
    if (two == nullptr) throw std::logic_error("attach_member_path: a member over one path");
    attach_path(two->sender(), path, std::move(tx), device);
}

std::vector<PathReport> member_paths(const FanoutMember& member) {
    const auto* two = dynamic_cast<const TwoPathMember*>(&member);
    return two != nullptr ? two->sender().paths() : std::vector<PathReport>{};
}

} // namespace rdmastream
