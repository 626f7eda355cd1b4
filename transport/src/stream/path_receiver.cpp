// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame code: see path_receiver.hpp.
#include "stream/path_receiver.hpp"

#include "rdmastream/error.hpp"
#include "stream/log_or_stderr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

PathReceiver::PathReceiver(std::array<std::unique_ptr<FrameReceiver>, kMaxPaths> paths, const Options& options)
    : options_(options),
      log_(log_or_stderr(options.log)),
      merge_(kMaxPaths, options.live ? Policy::kLive : Policy::kLossless, options.skew),
      wait_(options.poll_mode, options.waker, options.mail) {
    if (paths[0] == nullptr) throw std::logic_error("PathReceiver: path A's receiver founds the stream");
    base_ = slot_capacity(paths[0]->ring());
    count_ = paths.size();
    for (std::size_t p = 0; p < count_; ++p) {
        Path& path = paths_[p];
        path.range = 2 * p;
        path.up = paths[p] != nullptr;
        if (path.up) {
            path.peer = paths[p]->peer();
            path.device = paths[p]->device();
        } else {
            merge_.set_up(p, false); // it comes with attach()
        }
        ranges_[path.range].rx = std::move(paths[p]);
    }
    waiting_.resize(std::size_t{kRanges} * base_);
    held_.resize(std::size_t{kRanges} * base_);
    winners_.resize(kMaxFlows);
}

bool PathReceiver::attach(std::size_t p, std::unique_ptr<FrameReceiver> joined) {
    Path& path = paths_.at(p);
    if (slot_capacity(joined->ring()) != base_) {
        throw std::logic_error("PathReceiver::attach: a connection with another ring config");
    }
    const std::size_t range = path.range ^ 1; // the other of its two
    if (ranges_[range].frames > 0) return false; // the connection before its last still has frames out
    if (path.up && !path.ended) {
        // Its peer dialled again before we saw the old connection go (only
        // that peer can prove the join): the old one is over, lost as a
        // silent one would have been a moment later, and named so.
        log_(fmt::format("path {} ({}) lost: its peer found it dead first and came back on a new connection",
                        letter(p), rx(p).peer()));
        ++path.counters.downs;
    }
    ranges_[range].rx = std::move(joined); // the one before its last goes, if it had not
    const std::size_t old = path.range;
    path.range = range;
    path.peer = rx(p).peer();
    path.device = rx(p).device();
    if (ranges_[old].frames == 0) ranges_[old].rx.reset(); // nothing of it out: the lost connection goes
    path.up = true;
    path.ended = false;
    ++path.counters.ups;
    merge_.set_up(p, true);
    std::string others;
    for (std::size_t q = 0; q < count_; ++q) {
        if (paths_[q].up && !paths_[q].ended) others += others.empty() ? std::string(1, letter(q)) : fmt::format(" and {}", letter(q));
    }
    log_(fmt::format("path {} ({}) {}; streaming on path{} {}", letter(p), rx(p).peer(),
                    path.counters.ups > 1 || path.counters.downs > 0 ? "back" : "up",
                    others.size() > 1 ? "s" : "", others));
    return true;
}

PathReceiver::~PathReceiver() = default;

PathReceiver::Arrival PathReceiver::wait_frame(std::chrono::milliseconds idle) {
    if (state_ == ReceiverState::kFailed) {
        throw ConnectionError("receiver: wait_frame() after the stream failed on every path (the error thrown "
                              "then said why)");
    }
    if (state_ == ReceiverState::kLeft) throw std::logic_error("receiver: wait_frame() after leave()");
    if (state_ == ReceiverState::kEnded) return {Arrival::kEnd, {}};
    std::array<Datapath*, kMaxPaths> datapaths{};
    std::array<std::span<ibv_wc>, kMaxPaths> outs{};
    std::array<std::size_t, kMaxPaths> which{};
    for (;;) {
        if (std::optional<ReceivedFrame> f = merged(Clock::now())) return {Arrival::kFrame, *f};
        if (take_all()) continue;
        // Every path took all it had and the merge has nothing to hand out.
        std::size_t n = 0;
        for (std::size_t p = 0; p < count_; ++p) {
            Path& path = paths_[p];
            if (!path.up || path.ended) continue;
            datapaths[n] = &rx(p).datapath();
            outs[n] = rx(p).completions();
            which[n++] = p;
        }
        if (n == 0) { // every path ended (or was let go after another's end), and all it brought is out
            state_ = ReceiverState::kEnded;
            return {Arrival::kEnd, {}};
        }
        const PathWait::Woke w = wait_.wait(std::span<Datapath* const>(datapaths.data(), n),
                                            std::span<const std::span<ibv_wc>>(outs.data(), n), deadline(idle));
        if (w.kind == PathWait::Woke::kWoken) return {Arrival::kWoken, {}};
        if (w.kind == PathWait::Woke::kMail) {
            take_joined();
            continue;
        }
        if (w.kind == PathWait::Woke::kTimeout) {
            time_out(idle);
            continue;
        }
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t p = which[i];
            if (w.failed[i]) {
                lose(p, w.failed[i]);
                continue;
            }
            if (!w.paths[i]) continue;
            try {
                rx(p).waited(*w.paths[i]);
            } catch (...) {
                lose(p, std::current_exception());
            }
        }
    }
}

void PathReceiver::take_joined() {
    if (!options_.take_joined) return;
    std::size_t p = 0;
    while (std::unique_ptr<FrameReceiver> joined = options_.take_joined(p)) {
        if (!attach(p, std::move(joined))) {
            log_(fmt::format("path {}: a connection back refused: frames of its connection before last are still "
                            "held; it is dialled again",
                            letter(p)));
            if (options_.lost) options_.lost(p); // a dialling end tries again, with its backoff
        }
    }
}

bool PathReceiver::take_all() {
    bool any = false;
    const auto now = Clock::now();
    for (std::size_t p = 0; p < count_; ++p) {
        Path& path = paths_[p];
        if (!path.up || path.ended) continue;
        Range& range = ranges_[path.range];
        const auto base = static_cast<std::uint32_t>(path.range * base_);
        try {
            while (std::optional<Arrival> a = range.rx->take()) {
                any = true;
                if (a->kind == Arrival::kEnd) {
                    path.ended = true;
                    merge_.set_up(p, false); // it brings nothing more; what it brought stays queued
                    if (!first_end_) first_end_ = now;
                    break;
                }
                const ReceivedFrame& f = a->frame;
                const std::uint8_t flow = f.header.flow;
                if (!flow_seen_[flow]) { // once per flow: its queues
                    merge_.add_flow(flow, 2 * std::size_t{base_}); // a path's two connections' frames
                    flow_seen_[flow] = true;
                    flows_[flow_count_++] = flow;
                }
                waiting_[base + f.slot] = f;
                ++range.frames;
                merge_.arrive(p, flow, f.header.sequence, base + f.slot, now);
            }
        } catch (...) {
            lose(p, std::current_exception());
        }
    }
    return any;
}

std::optional<ReceivedFrame> PathReceiver::merged(Clock::time_point now) {
    for (std::size_t i = 0; i < flow_count_; ++i) {
        const std::uint8_t flow = flows_[i];
        while (std::optional<PathMerge::Out> out = merge_.next(flow, now)) {
            switch (out->kind) {
            case PathMerge::Out::kFrame: return hand_out(out->path, out->handle);
            case PathMerge::Out::kDuplicate: give_back(out->path, flow, out->number, out->handle); break;
            case PathMerge::Out::kGap: stats_.drops += out->gap_end - out->number; break;
            }
        }
    }
    return std::nullopt;
}

ReceivedFrame PathReceiver::hand_out(std::size_t p, std::uint32_t slot) {
    ReceivedFrame f = waiting_[slot];
    const std::uint8_t flow = f.header.flow;
    held_[slot] = f.header.sequence + 1;
    std::uint32_t side_bytes = 0;
    for (const SideData& s : f.side_data) side_bytes += static_cast<std::uint32_t>(s.bytes.size());
    winners_[flow][f.header.sequence % kWinners] = Winner{f.header.sequence, f.header, side_bytes, p, slot};
    // Format ids are the sender's, the same on every path; a path that
    // skipped the frame a format began with says nothing of it.
    f.format_changed = f.header.format_id != last_format_[flow];
    last_format_[flow] = f.header.format_id;
    f.slot = static_cast<std::uint16_t>(slot);
    ++stats_.frames;
    stats_.bytes += f.header.payload_size;
    if (f.header.sent_at_ns != 0 && f.arrived_at_ns >= f.header.sent_at_ns) {
        stats_.add_latency(std::chrono::nanoseconds(f.arrived_at_ns - f.header.sent_at_ns));
    }
    if (last_arrival_ns_ != 0 && f.arrived_at_ns > last_arrival_ns_) {
        stats_.max_gap = std::max(stats_.max_gap, std::chrono::nanoseconds(f.arrived_at_ns - last_arrival_ns_));
    }
    last_arrival_ns_ = std::max(last_arrival_ns_, f.arrived_at_ns);
    return f;
}

void PathReceiver::give_back(std::size_t p, std::uint8_t flow, std::uint64_t number, std::uint32_t slot) {
    const Winner& w = winners_[flow][number % kWinners];
    if (w.number == number) {
        compare(waiting_[slot], p, w);
    } else {
        ++paths_[p].counters.copies_unchecked; // its first copy long gone, or (live) it came after the gap
    }
    release_to_ring(slot);
}

void PathReceiver::release_to_ring(std::uint32_t slot) {
    const std::size_t r = slot / base_;
    Range& range = ranges_[r];
    range.rx->release(static_cast<std::uint16_t>(slot - r * base_)); // throws for a slot that holds no frame
    --range.frames;
    go_if_done(r);
}

bool PathReceiver::may_go(std::size_t r) const noexcept {
    const std::size_t p = r / 2;
    if (ranges_[r].rx == nullptr) return false;
    if (paths_[p].range != r) return true; // lost and replaced
    if (paths_[p].up || !ranges_[r].rx->device_removed()) return false;
    for (std::size_t q = 0; q < count_; ++q) {
        if (q != p && path(q) != nullptr) return true;
    }
    return false;
}

void PathReceiver::go_if_done(std::size_t r) {
    if (ranges_[r].frames != 0 || !may_go(r)) return;
    const std::size_t p = r / 2;
    const bool with_device = paths_[p].range == r; // its names stay in paths_[p] (report())
    ranges_[r].rx.reset();
    if (with_device && options_.device_gone) options_.device_gone();
}

namespace {

bool same_header(const FrameHeader& a, const FrameHeader& b) noexcept {
    // sent_at_ns is each path's own post time.
    return a.sequence == b.sequence && a.pts == b.pts && a.duration == b.duration &&
           a.payload_size == b.payload_size && a.flags == b.flags && a.format_id == b.format_id && a.flow == b.flow;
}

// The first offset at which two frames' payloads or side data differ, if any.
std::optional<std::size_t> first_difference(const ReceivedFrame& a, const ReceivedFrame& b) noexcept {
    const std::size_t n = std::min(a.payload.size(), b.payload.size());
    if (std::memcmp(a.payload.data(), b.payload.data(), n) != 0) {
        std::size_t i = 0;
        while (a.payload[i] == b.payload[i]) ++i;
        return i;
    }
    if (a.side_data.size() != b.side_data.size()) return n;
    for (std::size_t e = 0; e < a.side_data.size(); ++e) {
        const SideData &x = a.side_data[e], &y = b.side_data[e];
        if (x.kind != y.kind || x.bytes.size() != y.bytes.size() ||
            std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()) != 0) {
            return n;
        }
    }
    return std::nullopt;
}

} // namespace

void PathReceiver::compare(const ReceivedFrame& copy, std::size_t p, const Winner& w) {
    Path& path = paths_[p];
    std::uint32_t side_bytes = 0;
    for (const SideData& s : copy.side_data) side_bytes += static_cast<std::uint32_t>(s.bytes.size());
    std::string what;
    if (!same_header(w.header, copy.header) || side_bytes != w.side_bytes) {
        what = "its header differs";
    } else if (options_.compare_payloads && held_[w.slot] == w.number + 1) {
        // The consumer still holds the first copy: its bytes are still there.
        if (const std::optional<std::size_t> at = first_difference(waiting_[w.slot], copy)) {
            what = fmt::format("its bytes differ from offset {}", *at);
        }
    } else {
        ++path.counters.copies_unchecked;
        return;
    }
    if (what.empty()) return;
    ++path.counters.copies_differ;
    if (logged_difference_) return;
    logged_difference_ = true;
    log_(fmt::format("frame {} of flow {} came on paths {} and {}, and {} (the first copy was handed out; "
                    "counted as copies_differ, logged once)",
                    w.number, copy.header.flow, letter(w.path), letter(p), what));
}

void PathReceiver::lose(std::size_t p, const std::exception_ptr& error) {
    Path& path = paths_[p];
    path.up = false;
    ++path.counters.downs;
    merge_.set_up(p, false);
    std::size_t other = count_;
    for (std::size_t q = 0; q < count_; ++q) {
        if (q != p && paths_[q].up && !paths_[q].ended) other = q;
    }
    const bool some_ended = std::any_of(paths_.begin(), paths_.begin() + static_cast<std::ptrdiff_t>(count_),
                                        [](const Path& x) { return x.ended; });
    if (other == count_ && !some_ended) {
        state_ = ReceiverState::kFailed; // the last path: the stream's failure, as one path's is
        std::rethrow_exception(error);
    }
    std::string why;
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        why = e.what();
    }
    if (other == count_) {
        log_(fmt::format("path {} ({}) lost after the end of stream: {}", letter(p), rx(p).peer(), why));
        return;
    }
    log_(fmt::format("path {} ({}) lost: {}; streaming on path {}", letter(p), rx(p).peer(), why, letter(other)));
    go_if_done(path.range); // its device going: its ring lets go of it once its frames are back
    if (options_.lost) options_.lost(p);
}

void PathReceiver::time_out(std::chrono::milliseconds idle) {
    const auto now = Clock::now();
    const std::chrono::milliseconds silence = paths_up() > 1 ? std::min(idle, options_.path_silence) : idle;
    for (std::size_t p = 0; p < count_; ++p) {
        Path& path = paths_[p];
        if (!path.up || path.ended) continue;
        if (first_end_ && now >= *first_end_ + options_.end_grace) {
            // Another path ended the stream a while ago: this one brings nothing we need.
            path.up = false;
            merge_.set_up(p, false);
            log_(fmt::format("path {} ({}) did not end the stream within {} ms of the other; ended", letter(p),
                            rx(p).peer(), options_.end_grace.count()));
            continue;
        }
        if (now < rx(p).silent_at(silence)) continue;
        try {
            rx(p).silent(silence);
        } catch (...) {
            lose(p, std::current_exception());
        }
    }
}

std::size_t PathReceiver::paths_up() const noexcept {
    std::size_t n = 0;
    for (std::size_t p = 0; p < count_; ++p) n += paths_[p].up && !paths_[p].ended ? 1 : 0;
    return n;
}

Clock::time_point PathReceiver::deadline(std::chrono::milliseconds idle) const {
    const std::chrono::milliseconds silence = paths_up() > 1 ? std::min(idle, options_.path_silence) : idle;
    auto at = Clock::time_point::max();
    for (std::size_t p = 0; p < count_; ++p) {
        const Path& path = paths_[p];
        if (!path.up || path.ended) continue;
        at = std::min(at, ranges_[path.range].rx->silent_at(silence));
        if (first_end_) at = std::min(at, *first_end_ + options_.end_grace);
    }
    for (std::size_t i = 0; i < flow_count_; ++i) {
        if (const std::optional<Clock::time_point> d = merge_.deadline(flows_[i])) at = std::min(at, *d);
    }
    return at;
}

void PathReceiver::release(std::uint16_t slot) {
    if (slot >= slot_numbers() || ranges_[slot / base_].rx == nullptr) {
        throw std::out_of_range(fmt::format("receiver: release({}): no connection has that slot", slot));
    }
    release_to_ring(slot); // throws for a slot that holds no frame, noting nothing
    held_[slot] = 0;
}

void PathReceiver::leave() noexcept {
    for (Range& r : ranges_) {
        if (r.rx) r.rx->leave();
    }
    state_ = ReceiverState::kLeft;
}

std::vector<PathReport> PathReceiver::report() const {
    std::vector<PathReport> out;
    report(out);
    return out;
}

void PathReceiver::report(std::vector<PathReport>& out) const {
    out.resize(count_);
    for (std::size_t p = 0; p < count_; ++p) {
        const Counters c = counters(p);
        PathReport& r = out[p];
        r.name = letter(p);
        r.peer = paths_[p].peer; // into r's own string: its room reused
        r.device = paths_[p].device;
        r.up = paths_[p].up;
        r.frames_first = c.merge.first;
        // A copy the other path brought second is a frame this one did not
        // bring alone (late copies after a live gap aside).
        const std::uint64_t seconds = merge_.counters(1 - p).duplicates;
        r.frames_only = c.merge.first - std::min(c.merge.first, seconds);
        r.frames_lost = c.merge.missing;
        r.copies_differ = c.copies_differ;
        r.downs = c.downs;
        r.ups = c.ups;
    }
}

} // namespace rdmastream
