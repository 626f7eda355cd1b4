// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameOut over one FrameSender: every call passes straight through.
#include "frame_out.hpp"

#include "setup/busy_refuser.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace rdmastream::cli {
namespace {

class SingleOut final : public FrameOut {
public:
    // `listener`: the one the receiver dialled; while it streams, any other
    // receiver that dials is told "busy".
    SingleOut(std::unique_ptr<FrameSender> tx, std::uint32_t max_in_flight, std::unique_ptr<Listener> listener = {})
        : listener_(std::move(listener)), tx_(std::move(tx)) {
        if (listener_) busy_.emplace(*listener_, "receiver " + tx_->peer());
        depth_ = tx_->ring().slot_count;
        if (max_in_flight > 0) depth_ = std::min(depth_, std::size_t{max_in_flight});
        ++depth_; // + the frame a live sender keeps pending
        std::fprintf(stderr, "rdmasend: connected: the receiver's ring has %u slots of %u bytes; %s policy\n",
                     tx_->ring().slot_count, tx_->ring().slot_size,
                     // the receiver may have asked for live: say what is in force
                     tx_->policy() == Policy::kLive ? "live" : "lossless");
    }

    ibv_pd* pd() const noexcept override { return tx_->pd(); }
    std::size_t depth() const noexcept override { return depth_; }
    std::uint64_t send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                       std::uint64_t cookie, std::chrono::milliseconds timeout) override {
        return tx_->send(payload, lkey, meta, cookie, timeout).value(); // no waker: never interrupted
    }
    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) override {
        tx_->set_format(format, timeout);
    }
    void progress() override { tx_->progress(); }
    bool takes_frame_now() override {
        if (tx_->policy() == Policy::kLossless) {
            return true;
        }
        tx_->progress(); // credits home; a frame kept pending takes a free slot before ours could
        return tx_->credits_available() > 0;
    }
    // FrameSender numbers only the frames it is offered, so the receiver
    // does not see these as gaps in the frame numbers (it does see the
    // transport's own live drops). That needs a FrameSender call that
    // skips a number and counts a drop, without a payload.
    void drop_unoffered() override { tx_->skip_frame(); }
    void wait_done(std::uint64_t number, std::chrono::milliseconds timeout) override {
        tx_->wait_done(number, timeout);
    }
    void finish(std::chrono::milliseconds timeout) override { tx_->finish(timeout); }
    StreamStats stats() const noexcept override { return tx_->stats(); }
    std::vector<PeerReport> receivers() const override { return {}; }

private:
    std::unique_ptr<Listener> listener_; // listening: kept, so later receivers hear "busy"
    std::optional<BusyRefuser> busy_;    // declared after listener_: it stops before the listener goes
    std::unique_ptr<FrameSender> tx_;
    std::size_t depth_ = 0;
};

} // namespace

std::unique_ptr<FrameOut> open_single(const Endpoint& peer, bool listen, const OutOptions& opts) {
    SenderOptions so = opts.sender;
    so.caller_depth = opts.max_in_flight; // --slots: signalled often enough for so few (0: the ring's)
    if (!listen) {
        return std::make_unique<SingleOut>(FrameSender::connect(peer, so, opts.connect_timeout),
                                           opts.max_in_flight);
    }
    auto listener = std::make_unique<Listener>(peer);
    listener->set_allow(opts.allow);
    listener->set_log([](const std::string& line) { std::fprintf(stderr, "rdmasend: %s\n", line.c_str()); });
    std::fprintf(stderr, "rdmasend: listening on %s:%u for a receiver%s%s\n", peer.host.empty() ? "*" : peer.host.c_str(),
                 listener->port(), opts.allow.empty() ? "" : "; allowed: ",
                 opts.allow.empty() ? "" : opts.allow.describe().c_str());
    auto tx = FrameSender::accept(*listener, so, opts.connect_timeout);
    return std::make_unique<SingleOut>(std::move(tx), opts.max_in_flight, std::move(listener));
}

} // namespace rdmastream::cli
