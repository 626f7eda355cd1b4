// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/fanout_sender.hpp"
#include "wire/side_data_wire.hpp"

#include "setup/cm_devices.hpp"

#include "rdmastream/devices.hpp"
#include "rdmastream/error.hpp"

#include <poll.h>

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {

namespace {
// The device the fan-out's memory lives on: the listener's, if it is bound
// to an address; else the named one; else the only one there is. A named
// device is checked here, once: a wrong one fails at start, not per joiner.
ibv_context* pick_device(const Listener& listener, const std::string& name) {
    if (ibv_context* bound = listener.device(); bound != nullptr) {
        const std::string got = ibv_get_device_name(bound->device);
        if (!name.empty() && name != got) {
            throw UserError(fmt::format("the listening address is on RDMA device {}, not {}: listen on an address "
                                        "of {} (see `rdma link show`), or drop the device option",
                                        got, name, name));
        }
        return bound;
    }
    return find_cm_device(name); // every address: the device named, or the only one
}
} // namespace

FanoutSender::FanoutSender(Listener& listener, const SenderOptions& opts, LogFn log)
    : listener_(listener),
      opts_(opts),
      log_(std::move(log)),
      pd_(make_shared_pd(pick_device(listener, opts.device))),
      pd_b_(pd_),
      member_opts_(member_options()),
      plan_(FrameSender::opening_plan(member_opts_)),
      pending_(listener_, plan_, kJoinPatience) {
    shared_[0].resize(kSharedFrames);
}

namespace {
// Door B's PD: door A's when both listen on one device.
std::shared_ptr<ibv_pd> pd_of_door_b(const std::shared_ptr<ibv_pd>& pd_a, const Listener& listener_b,
                                     const std::string& device_b) {
    ibv_context* b = pick_device(listener_b, device_b);
    return b == pd_a->context ? pd_a : make_shared_pd(b);
}

OpeningPlan with_joins(OpeningPlan plan, const std::vector<std::shared_ptr<const SessionSecret>>* secrets) {
    plan.joins_any = secrets;
    return plan;
}
} // namespace

FanoutSender::FanoutSender(Listener& listener, Listener& listener_b, const SenderOptions& opts,
                           const SenderConfig& two_paths, LogFn log)
    : listener_(listener),
      listener_b_(&listener_b),
      opts_(opts),
      log_(std::move(log)),
      pd_(make_shared_pd(pick_device(listener, opts.device))),
      pd_b_(pd_of_door_b(pd_, listener_b, two_paths.device_b)),
      member_opts_(member_options()),
      member_opts_b_(member_opts_),
      two_paths_(two_paths),
      plan_(with_joins(FrameSender::opening_plan(member_opts_), &secrets_)), // a path A back comes through door A
      pending_(listener_, plan_, kJoinPatience) {
    member_opts_b_.shared_pd = pd_b_;
    member_opts_b_.device = two_paths.device_b;
    plan_b_ = with_joins(FrameSender::opening_plan(member_opts_b_), &secrets_);
    pending_b_ = std::make_unique<PendingPeers>(*listener_b_, plan_b_, kJoinPatience);
    two_paths_.on_done = [this](std::uint64_t token, FrameFate fate) { member_done(token, fate); };
    two_paths_.log = log_;
    shared_[0].resize(kSharedFrames);
}

FanoutSender::~FanoutSender() {
    members_.clear(); // each reports its undelivered frames through member_done
}

SenderOptions FanoutSender::member_options() {
    SenderOptions o = opts_;
    o.shared_pd = pd_;
    o.on_done = [this](std::uint64_t token, FrameFate fate) { member_done(token, fate); };
    return o;
}

bool FanoutSender::frame_free(std::uint8_t flow, std::uint64_t number) const noexcept {
    const SharedFrame& f = shared_[flow][number % kSharedFrames];
    return f.number != number || f.holders == 0;
}

void FanoutSender::member_done(std::uint64_t token, FrameFate fate) {
    const auto flow = static_cast<std::uint8_t>(token >> 56);
    SharedFrame& o = shared_[flow][(token & ((std::uint64_t{1} << 56) - 1)) % kSharedFrames];
    o.delivered = o.delivered || fate == FrameFate::kDelivered;
    if (--o.holders != 0) {
        return;
    }
    if (!o.delivered) {
        ++stats_.drops;
    }
    if (opts_.on_done) {
        opts_.on_done(o.cookie, o.delivered ? FrameFate::kDelivered : FrameFate::kDropped);
    }
}

void FanoutSender::depart(Member& m, bool left) {
    departed_.push_back({m.peer, m.sender->stats(), m.sender->policy(), left, member_paths(*m.sender)});
}

template <typename Fn>
void FanoutSender::for_each_member(Fn&& fn) {
    for (auto it = members_.begin(); it != members_.end();) {
        try {
            fn(*(*it)->sender);
            ++it;
        } catch (const PeerLeft& e) { // it has what it wanted: it goes, with no complaint
            if (log_) log_(e.what());
            depart(**it, true);
            it = members_.erase(it);
        } catch (const TimeoutError& e) { // stuck past the member timeout: it goes, the others need not wait
            if (log_) log_(fmt::format("receiver {} cut: it held the others back: {}", (*it)->peer, e.what()));
            depart(**it, true);
            it = members_.erase(it);
        } catch (const std::exception& e) {
            if (log_) log_(fmt::format("receiver {} left: {}", (*it)->peer, e.what()));
            depart(**it, true);
            it = members_.erase(it); // its undelivered frames come back as dropped
        }
    }
}

std::size_t FanoutSender::admit() {
    if (look_due()) {
        if (readable(listener_)) accept_requests();
        if (pending_.size() > 0) {
            while (std::optional<Opening> o = pending_.advance()) take(std::move(*o));
        }
        if (listener_b_ != nullptr) {
            try {
                if (readable(*listener_b_)) accept_joins();
                if (pending_b_->size() > 0) {
                    while (std::optional<Opening> o = pending_b_->advance()) join_path(std::move(*o), device_b());
                }
            } catch (const ListenerError& e) {
                // Door B's own failure (its device went) costs second paths
                // only: the receivers stream on over their first.
                if (log_) log_(fmt::format("door B stopped taking second paths: {}", e.cause()));
                pending_b_.reset();
                listener_b_ = nullptr;
            }
        }
    }
    return joining_.empty() ? 0 : advance_joiners();
}

void FanoutSender::take(Opening o) {
    if (o.handshake->join()) { // a two-path receiver's path A, back
        join_path(std::move(o), 0);
        return;
    }
    auto j = std::make_unique<Joiner>();
    j->peer = o.path->peer_name();
    if (two_doors()) j->secret = o.handshake->session_secret();
    j->sender = FrameSender::over(std::move(o), member_opts_);
    j->deadline = std::chrono::steady_clock::now() + kJoinPatience;
    joining_.push_back(std::move(j));
}

StreamSoFar FanoutSender::so_far() const {
    StreamSoFar s;
    s.next = next_number_;
    s.formats = formats_;
    s.clock = clock_;
    return s;
}

void FanoutSender::join_path(Opening o, std::size_t device) {
    const Handshake::Join& join = *o.handshake->join();
    const std::size_t path = join.path_b ? 1 : 0;
    const auto m = std::find_if(members_.begin(), members_.end(),
                                [&](const std::unique_ptr<Member>& x) { return x->secret == join.secret; });
    const std::string peer = o.path->peer_name();
    if (m == members_.end()) {
        const bool joining = std::any_of(joining_.begin(), joining_.end(),
                                         [&](const std::unique_ptr<Joiner>& j) { return j->secret == join.secret; });
        if (joining) { // its first path is still taking the format: this one waits for it
            early_paths_.push_back(std::make_unique<EarlyPath>(EarlyPath{std::move(o), device}));
            return;
        }
        // it left since its token was screened
        if (log_) log_(fmt::format("receiver {}: a path {} for a receiver no longer here, dropped", peer, "AB"[path]));
        return;
    }
    try {
        std::unique_ptr<FrameSender> tx = FrameSender::over(std::move(o), device == 0 ? member_opts_ : member_opts_b_);
        if (!has_two_paths(*(*m)->sender)) {
            SenderConfig c = two_paths_; // its paths' lines name the receiver
            c.log = [log = log_, who = (*m)->peer](const std::string& line) {
                if (log) log(fmt::format("receiver {}: {}", who, line));
            };
            (*m)->sender = two_path_member(std::move((*m)->sender), so_far(), c);
        }
        attach_member_path(*(*m)->sender, path, std::move(tx), device);
    } catch (const std::exception& e) {
        if (log_) log_(fmt::format("receiver {}: its path {} ({}) could not join: {}", (*m)->peer, "AB"[path], peer,
                                   e.what()));
    }
}

void FanoutSender::collect_secrets() {
    secrets_.clear();
    for (const auto& m : members_) {
        if (m->secret) secrets_.push_back(m->secret);
    }
    for (const auto& j : joining_) { // a second path may come before the first has the format
        if (j->secret) secrets_.push_back(j->secret);
    }
}

void FanoutSender::accept_joins() {
    // Door B takes second paths only: a receiver's first connection comes
    // through door A.
    const auto joins_only = [](std::span<const std::byte> hello, const Listener::Requester&) {
        if (!wire::read_join(wire::Role::kReceiver, hello)) {
            throw PeerRefused(wire::RejectReason::kBusy,
                              "this door takes receivers' second paths only: dial the sender's first address first");
        }
    };
    collect_secrets();
    pending_b_->take_requests(PendingPeers::kRequestsPerLook, joins_only);
}

bool FanoutSender::look_due() {
    // admit() runs for every frame, and nobody joining is the common case:
    // a clock read (vDSO, no syscall) decides whether to look at all. The
    // pending handshakes move on at the same pace: a few syscalls each per
    // look, never per frame.
    const auto now = std::chrono::steady_clock::now();
    if (now < next_listener_look_) {
        return false;
    }
    next_listener_look_ = now + kListenerLook;
    return true;
}

bool FanoutSender::readable(const Listener& listener) {
    pollfd pfd{listener.fd(), POLLIN, 0};
    return ::poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN) != 0;
}

void FanoutSender::accept_requests() {
    // Only while the listener holds an event: each request costs syscalls
    // (and, with a device named, a device listing), so the listener is never
    // read to find out that there is nothing. New requests are accepted at
    // once; their handshakes and the format then complete over later
    // admit() calls, so a joiner costs the others no wait. The fan-out's
    // own limit is checked on the request itself, before its QP, CQ and
    // memory regions exist: a refused receiver costs nothing but its reject.
    const auto admission = [this](std::span<const std::byte>, const Listener::Requester&) {
        if (members_.size() + joining_.size() + pending_.size() >= max_receivers_) {
            throw PeerRefused(wire::RejectReason::kBusy,
                              fmt::format("busy: this sender takes at most {} receivers at once (--max-receivers)",
                                          max_receivers_));
        }
    };
    // A failure of the listener itself (ListenerError: its device removed,
    // its channel broken) is not one receiver's and ends the fan-out's
    // admitting: it goes to the caller. Each receiver's own failures are
    // logged by the listener and cost only that receiver.
    if (two_doors()) collect_secrets(); // a two-path receiver's path A may come back here
    pending_.take_requests(PendingPeers::kRequestsPerLook, admission); // admit() always returns
}

std::size_t FanoutSender::advance_joiners() {
    std::size_t joined = 0;
    for (auto it = joining_.begin(); it != joining_.end();) {
        Joiner& j = **it;
        try {
            if (!advance(j)) {
                if (std::chrono::steady_clock::now() >= j.deadline) {
                    throw TimeoutError(fmt::format("it took no format within {} ms",
                                                   std::chrono::duration_cast<std::chrono::milliseconds>(kJoinPatience)
                                                       .count()));
                }
                ++it;
                continue;
            }
        } catch (const std::exception& e) {
            if (log_) log_(fmt::format("receiver {} could not join: {}", j.peer, e.what()));
            std::erase_if(early_paths_, [&](const std::unique_ptr<EarlyPath>& p) { // its second path goes with it
                return p->of(j.secret);
            });
            it = joining_.erase(it);
            continue;
        }
        for (std::uint8_t f = 0; f < kMaxFlows; ++f) {
            if (f == 0 || formats_[f]) j.sender->start_numbering_at(next_number_[f], f); // the stream's numbers
        }
        auto m = std::make_unique<Member>();
        m->peer = std::move(j.peer);
        m->secret = std::move(j.secret);
        if (log_) {
            log_(fmt::format("receiver {} joined ({} slots of {} bytes, {} policy); {} receiver(s) now", m->peer,
                             j.sender->ring().slot_count, j.sender->ring().slot_size,
                             j.sender->policy() == Policy::kLive ? "live" : "lossless", members_.size() + 1));
        }
        m->sender = one_path_member(std::move(j.sender), 0);
        const std::shared_ptr<const SessionSecret> secret = m->secret;
        members_.push_back(std::move(m));
        it = joining_.erase(it);
        ++joined;
        // Its second path, if it came first.
        for (auto e = early_paths_.begin(); e != early_paths_.end();) {
            if ((*e)->of(secret)) {
                std::unique_ptr<EarlyPath> early = std::move(*e);
                e = early_paths_.erase(e);
                join_path(std::move(early->opening), early->device);
            } else {
                ++e;
            }
        }
    }
    return joined;
}

bool FanoutSender::advance(Joiner& j) {
    // A late joiner learns the stream's formats (each flow's latest, if it
    // changed while this one was on its way), one at a time (one control
    // message in flight; a flow's slots come with its format), before its
    // first frame.
    if (j.format_posted && !j.sender->format_settled()) return false;
    for (std::uint8_t f = 0; f < kMaxFlows; ++f) {
        if (formats_[f] && j.format_ids[f] != formats_[f]->id) {
            j.sender->begin_format(*formats_[f]);
            j.format_ids[f] = formats_[f]->id;
            j.format_posted = true;
            return false;
        }
    }
    // ...and where the stream's pts 0 is, after the format (one control
    // message in flight at a time).
    if (clock_ && j.clock_sent != clock_generation_) {
        if (j.sender->try_post_clock(*clock_)) j.clock_sent = clock_generation_;
        return false;
    }
    return true;
}

bool FanoutSender::wait_for_receivers(std::size_t count, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        next_listener_look_ = {}; // look now: this is a wait, not the per-frame path
        admit();
        if (members_.size() >= count) {
            return true;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            throw TimeoutError(fmt::format("only {} of {} receivers connected within {} ms", members_.size(), count,
                                           timeout.count()));
        }
        // Sleeps until a request comes or a pending handshake moves; joiners
        // taking the format move on through admit(), so look again soon
        // while there are any.
        const auto until = joining_.empty() ? deadline : std::min(deadline, now + std::chrono::milliseconds(1));
        if (pending_.wait(until, opts_.waker.get()) == Readiness::kWoken) return false;
    }
}

std::uint32_t FanoutSender::max_payload(std::uint8_t flow) const noexcept {
    std::uint32_t m = UINT32_MAX;
    for (const auto& member : members_) m = std::min(m, member->sender->max_payload(flow));
    return members_.empty() ? 0 : m;
}

std::uint64_t FanoutSender::send(std::span<const std::byte> payload, const FrameMemory::Impl& memory,
                                 const FrameMeta& meta, std::uint64_t cookie, std::chrono::milliseconds timeout) {
    admit();
    // The caller's mistakes are the caller's, not one receiver's: refused
    // before any receiver takes the frame (each would drop on its own).
    if (meta.flow >= kMaxFlows || (meta.flow != 0 && !formats_[meta.flow])) {
        throw UserError(fmt::format("a frame of flow {}, which has no format: announce it first (set_format with "
                                    "StreamFormat::flow {})",
                                    meta.flow, meta.flow));
    }
    const std::size_t side_size = wire::side_data_size(meta.side_data);
    const std::optional<wire::StreamFormat>& format = formats_[meta.flow];
    if (const std::uint32_t room = format ? format->max_side_data : 0; side_size > room) {
        throw UserError(fmt::format("a frame with {} bytes of side data, where its stream format declares room "
                                    "for {}: raise StreamFormat::max_side_data",
                                    side_size, room));
    }
    const std::uint64_t number = next_number_[meta.flow]++;
    const std::uint64_t token = token_of(meta.flow, number);
    SharedFrame& o = shared_[meta.flow][number % kSharedFrames];
    if (o.holders != 0) {
        throw std::logic_error("fan-out: more frames in flight than its table holds: wait_done() the oldest first");
    }
    // One hold per receiver that takes the frame, plus our own while we
    // hand it out. FrameSender::send takes the frame, throws, or returns
    // nullopt when the options' waker ended its wait for a slot; the others
    // may hold the frame already, so this one must take it too (and number
    // it as they do): it waits again. Only a wake restarts that wait.
    o = SharedFrame{number, cookie, 1, false};
    for_each_member([&](FanoutMember& s) {
        if (payload.size() + side_size > s.max_payload(meta.flow)) {
            throw UserError(fmt::format("a {}-byte frame (with {} bytes of side data) does not fit its slots of flow {} "
                                        "(at most {} bytes)",
                                        payload.size(), side_size, meta.flow, s.max_payload(meta.flow)));
        }
        while (!s.send(payload, memory, meta, token, std::min(timeout, member_timeout_))) {
        }
        ++o.holders;
    });
    ++stats_.frames;
    stats_.bytes += payload.size();
    member_done(token, FrameFate::kDropped); // our own hold
    return number;
}

void FanoutSender::set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) {
    if (format.flow >= kMaxFlows) {
        throw std::invalid_argument(fmt::format("set_format: flow {} (flows 0..{})", format.flow, kMaxFlows - 1));
    }
    if (shared_[format.flow].empty()) shared_[format.flow].resize(kSharedFrames); // a new flow
    formats_[format.flow] = format;
    for_each_member([&](FanoutMember& s) { s.set_format(format, std::min(timeout, member_timeout_)); });
}

void FanoutSender::set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) {
    clock_ = anchor;
    ++clock_generation_;
    for_each_member([&](FanoutMember& s) { s.set_clock(anchor, std::min(timeout, member_timeout_)); });
}

void FanoutSender::progress() {
    admit(); // joiners move on while the caller only services the stream (pacing, waiting, dropping)
    for_each_member([](FanoutMember& s) { s.progress(); });
}

bool FanoutSender::has_lossless_member() const noexcept {
    return std::any_of(members_.begin(), members_.end(), [](const std::unique_ptr<Member>& m) {
        return m->sender->policy() == Policy::kLossless;
    });
}

bool FanoutSender::member_has_free_slot(std::uint8_t flow) {
    bool any = false;
    for_each_member([&](FanoutMember& s) { any = any || s.has_free_slot(flow); });
    return any;
}

void FanoutSender::drop_unoffered(std::uint8_t flow) noexcept {
    ++stats_.drops;
    ++next_number_[flow]; // frame numbers are the stream's: a joiner starts at the next one
    for (const auto& m : members_) {
        if (m->sender->has_flow(flow)) m->sender->skip_frame(flow);
    }
}

bool FanoutSender::can_take_frame(std::uint8_t flow) {
    if (has_lossless_member()) {
        return true; // send() waits for its slot: it takes every frame
    }
    // Live credits are current only after progress(), which also posts a
    // frame a member kept pending (it takes the slot before a new one could)
    // and may admit a lossless joiner.
    progress();
    return has_lossless_member() || member_has_free_slot(flow);
}

void FanoutSender::wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) {
    if (flow >= kMaxFlows || number >= next_number_[flow]) {
        throw std::logic_error(fmt::format("fan-out: wait_done({}) of flow {}: that frame was never sent", number,
                                           flow));
    }
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto deadline = started + timeout;
    while (!frame_free(flow, number)) {
        const auto now = Clock::now();
        if (now >= deadline) {
            throw TimeoutError(fmt::format("fan-out: frame {} of flow {} is still held by a receiver after {} ms",
                                           number, flow, timeout.count()));
        }
        // Members number frames as the stream does; one that joined after
        // this frame, or is done with it, returns at once. A wait on one
        // member (woken by its completions) lasts at most a keepalive
        // period, so the others' keepalives and credits are serviced below
        // while one holds the frame; one that holds it for the member
        // timeout is cut (for_each_member drops it on the TimeoutError).
        for_each_member([&](FanoutMember& s) {
            if (frame_free(flow, number)) return;
            const auto held = Clock::now() - started;
            const auto cut_in = std::chrono::ceil<std::chrono::milliseconds>(member_timeout_ - held);
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            const auto wait = std::max(std::chrono::milliseconds(0), std::min({left, cut_in, opts_.keepalive}));
            try {
                s.wait_done(number, wait, flow);
            } catch (const TimeoutError&) {
                if (Clock::now() - started >= member_timeout_) { // held too long: cut, saying for how long
                    throw TimeoutError(fmt::format("sender: it held frame {} for {} ms, the member timeout", number,
                                                   member_timeout_.count()));
                }
            }
        });
        progress(); // joiners, and every member's credits and keepalives
    }
}

void FanoutSender::finish(std::chrono::milliseconds timeout) {
    for_each_member([&](FanoutMember& s) { s.finish(std::min(timeout, member_timeout_)); });
}

void FanoutSender::stop() noexcept {
    try {
        pending_.drop_all("the sender stopped before it joined");
    } catch (...) { // only a log line can fail: the peers left go with pending_
    }
    joining_.clear();
    early_paths_.clear();
    members_.clear(); // each reports its undelivered frames through member_done
}

std::vector<FanoutSender::ReceiverStats> FanoutSender::receiver_stats() const {
    std::vector<ReceiverStats> out = departed_;
    for (const auto& m : members_) {
        out.push_back({m->peer, m->sender->stats(), m->sender->policy(), false, member_paths(*m->sender)});
    }
    return out;
}

} // namespace rdmastream
