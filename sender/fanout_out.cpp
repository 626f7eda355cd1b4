// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameOut over a FanoutSender: several receivers dial in; each frame goes
// to all of them from the same registered memory (one registration on the
// fan-out's PD: still no copy).
//
// The frames in flight are FanoutSender's table (it keeps the session's
// cookie and waits on the receivers that hold a frame): nothing is tracked
// here.
#include "frame_out.hpp"

#include "rdmastream/error.hpp"
#include "stream/fanout_sender.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace rdmastream::cli {
namespace {

// Frames out at once when --slots is not given: rdmarecv's default ring.
constexpr std::size_t kDefaultDepth = 8;

void log_line(const std::string& line) { std::fprintf(stderr, "rdmasend: %s\n", line.c_str()); }

// Every member's writes are signalled often enough for the frames
// rdmasend keeps out (SenderOptions::caller_depth), whatever its ring.
SenderOptions signalled_for_depth(const OutOptions& opts, std::size_t depth) {
    SenderOptions o = opts.sender;
    o.caller_depth = static_cast<std::uint32_t>(depth - 1); // the live pending frame is never posted
    return o;
}

class FanoutOut final : public FrameOut {
public:
    FanoutOut(const Endpoint& local, std::size_t count, const OutOptions& opts)
        : // + the frame a live receiver keeps pending
          depth_((opts.max_in_flight > 0 ? std::size_t{opts.max_in_flight} : kDefaultDepth) + 1),
          listener_(local),
          fan_(listener_, signalled_for_depth(opts, depth_), log_line) {
        listener_.set_allow(opts.allow);
        listener_.set_log(log_line); // refusals at the connect request (allow list, limits, bad advert)
        fan_.set_max_receivers(opts.max_receivers);
        fan_.set_member_timeout(opts.member_timeout);
        std::fprintf(stderr, "rdmasend: listening on %s:%u for %zu receiver(s); more may join while it streams\n",
                     local.host.empty() ? "*" : local.host.c_str(), listener_.port(), count);
        try {
            fan_.wait_for_receivers(count, opts.connect_timeout);
        } catch (const TimeoutError& e) {
            throw TimeoutError(fmt::format("{}: start the others (rdmarecv --connect THIS-HOST:{}), or give fewer "
                                           "--receivers or a longer --connect-timeout",
                                           e.what(), listener_.port()));
        }
        std::fprintf(stderr, "rdmasend: %zu receiver(s) connected: streaming (%s policy unless a receiver asks "
                             "for live)\n",
                     fan_.receivers(), opts.sender.policy == Policy::kLive ? "live" : "lossless");
    }

    ibv_pd* pd() const noexcept override { return fan_.pd(); }
    std::size_t depth() const noexcept override { return depth_; }

    std::uint64_t send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                       std::uint64_t cookie, std::chrono::milliseconds timeout) override {
        return fan_.send(payload, lkey, meta, cookie, timeout); // with no receiver on_done fires in here
    }

    void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) override {
        fan_.set_format(format, timeout);
    }

    void progress() override { fan_.progress(); }
    bool takes_frame_now() override { return fan_.can_take_frame(); }
    void drop_unoffered() override { fan_.drop_unoffered(); }

    void wait_done(std::uint64_t number, std::chrono::milliseconds timeout) override {
        try {
            fan_.wait_done(number, timeout);
        } catch (const TimeoutError&) {
            throw TimeoutError(fmt::format(
                "a receiver has held frame {} for {} ms: it stopped taking frames (a stuck lossless receiver "
                "holds every other one back); give it --policy live, or a longer --idle-timeout",
                number, timeout.count()));
        }
    }

    void finish(std::chrono::milliseconds timeout) override { fan_.finish(timeout); }
    StreamStats stats() const noexcept override { return fan_.stats(); }

    std::vector<PeerReport> receivers() const override {
        std::vector<PeerReport> out;
        for (auto& r : fan_.receiver_stats()) {
            out.push_back({std::move(r.peer), r.stats, r.policy == Policy::kLive ? "live" : "lossless", r.left});
        }
        return out;
    }

private:
    std::size_t depth_;
    Listener listener_; // declared before fan_, which holds it
    FanoutSender fan_;
};

} // namespace

std::unique_ptr<FrameOut> open_fanout(const Endpoint& local, std::size_t count, const OutOptions& opts) {
    return std::make_unique<FanoutOut>(local, count, opts);
}

} // namespace rdmastream::cli
