#include "rdmastream/fanout_sender.hpp"

#include "rdmastream/error.hpp"

#include <poll.h>

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {

namespace {
// The device the fan-out's memory lives on: the listener's, if it is bound
// to an address; else the named one; else the only one there is.
ibv_context* pick_device(const Listener& listener, const std::string& name) {
    if (listener.device() != nullptr) {
        return listener.device();
    }
    int n = 0;
    ibv_context** list = rdma_get_devices(&n);
    if (list == nullptr || n == 0) {
        if (list) rdma_free_devices(list);
        throw UserError("no RDMA device is usable: see docs/softroce.md to set up Soft-RoCE");
    }
    ibv_context* pick = nullptr;
    std::string names;
    for (int i = 0; i < n; ++i) {
        const char* dev = ibv_get_device_name(list[i]->device);
        names += (i ? ", " : "") + std::string(dev);
        if (name.empty() ? n == 1 : name == dev) pick = list[i];
    }
    rdma_free_devices(list); // the contexts stay open: librdmacm keeps them for the process
    if (pick == nullptr) {
        throw UserError(name.empty() ? fmt::format("several RDMA devices ({}): listen on an address of one, or "
                                                   "name the device",
                                                   names)
                                     : fmt::format("there is no RDMA device {}; this machine has: {}", name, names));
    }
    return pick;
}
} // namespace

FanoutSender::FanoutSender(Listener& listener, const SenderOptions& opts, LogFn log)
    : listener_(listener),
      opts_(opts),
      log_(std::move(log)),
      pd_(make_shared_pd(pick_device(listener, opts.device))),
      outstanding_(kOutstanding) {}

FanoutSender::~FanoutSender() {
    members_.clear(); // each reports its undelivered frames through frame_done
}

SenderOptions FanoutSender::member_options() {
    SenderOptions o = opts_;
    o.shared_pd = pd_;
    o.on_done = [this](std::uint64_t token, FrameFate fate) { frame_done(token, fate); };
    return o;
}

void FanoutSender::frame_done(std::uint64_t token, FrameFate fate) {
    Outstanding& o = outstanding_[token % kOutstanding];
    o.delivered = o.delivered || fate == FrameFate::kDelivered;
    if (--o.remaining == 0 && opts_.on_done) {
        opts_.on_done(o.cookie, o.delivered ? FrameFate::kDelivered : FrameFate::kDropped);
    }
}

template <typename Fn>
void FanoutSender::for_each_member(Fn&& fn) {
    for (auto it = members_.begin(); it != members_.end();) {
        try {
            fn(*(*it)->sender);
            ++it;
        } catch (const std::exception& e) {
            if (log_) log_(fmt::format("receiver {} left: {}", (*it)->peer, e.what()));
            departed_.push_back({(*it)->peer, (*it)->sender->stats(), (*it)->sender->policy(), true});
            it = members_.erase(it); // its undelivered frames come back as dropped
        }
    }
}

std::size_t FanoutSender::admit(std::chrono::milliseconds timeout) {
    std::size_t joined = 0;
    for (;;) {
        std::unique_ptr<FrameSender> s;
        try {
            s = FrameSender::accept_waiting(listener_, member_options());
            if (!s) return joined;
            s->start_numbering_at(next_token_);             // frame numbers are the stream's
            if (format_) s->set_format(*format_, timeout); // a late joiner learns the format first
        } catch (const std::exception& e) {
            if (log_) log_(fmt::format("a receiver could not join: {}", e.what()));
            continue;
        }
        auto m = std::make_unique<Member>();
        m->peer = s->peer();
        m->sender = std::move(s);
        if (log_) {
            log_(fmt::format("receiver {} joined ({} slots of {} bytes, {} policy); {} receiver(s) now", m->peer,
                             m->sender->ring().slot_count, m->sender->ring().slot_size,
                             m->sender->policy() == Policy::kLive ? "live" : "lossless", members_.size() + 1));
        }
        members_.push_back(std::move(m));
        ++joined;
    }
}

void FanoutSender::wait_for_receivers(std::size_t count, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (members_.size() < count) {
        admit(timeout);
        if (members_.size() >= count) break;
        if (std::chrono::steady_clock::now() >= deadline) {
            throw std::runtime_error(fmt::format("only {} of {} receivers connected within {} ms", members_.size(),
                                                 count, timeout.count()));
        }
        pollfd pfd{listener_.fd(), POLLIN, 0};
        ::poll(&pfd, 1, 100);
    }
}

std::uint32_t FanoutSender::max_payload() const noexcept {
    std::uint32_t m = UINT32_MAX;
    for (const auto& member : members_) m = std::min(m, member->sender->max_payload());
    return members_.empty() ? 0 : m;
}

std::uint64_t FanoutSender::send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                                 std::uint64_t cookie, std::chrono::milliseconds timeout) {
    admit(timeout);
    const std::uint64_t token = next_token_++;
    Outstanding& o = outstanding_[token % kOutstanding];
    if (o.remaining != 0) {
        throw std::logic_error("fan-out: too many frames outstanding");
    }
    // One reference per receiver that takes the frame, plus our own while we
    // hand it out. FrameSender::send either takes a frame or throws.
    o = Outstanding{cookie, 1, false};
    for_each_member([&](FrameSender& s) {
        if (payload.size() > s.max_payload()) {
            throw UserError(fmt::format("a {}-byte frame does not fit its {}-byte slots", payload.size(),
                                        s.ring().slot_size));
        }
        s.send(payload, lkey, meta, token, timeout);
        ++o.remaining;
    });
    ++stats_.frames;
    stats_.bytes += payload.size();
    frame_done(token, FrameFate::kDropped); // our own reference
    return token;
}

void FanoutSender::set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) {
    format_ = format;
    for_each_member([&](FrameSender& s) { s.set_format(format, timeout); });
}

void FanoutSender::progress() {
    for_each_member([](FrameSender& s) { s.progress(); });
}

void FanoutSender::finish(std::chrono::milliseconds timeout) {
    for_each_member([&](FrameSender& s) { s.finish(timeout); });
}

std::vector<FanoutSender::ReceiverStats> FanoutSender::receiver_stats() const {
    std::vector<ReceiverStats> out = departed_;
    for (const auto& m : members_) out.push_back({m->peer, m->sender->stats(), m->sender->policy(), false});
    return out;
}

} // namespace rdmastream
