// SPDX-License-Identifier: LGPL-2.1-or-later
// A Sender with one receiver over two paths (docs/design/two-paths.md,
// Decisions 4 and 5): a FrameSender per path, each with its own credits,
// keepalives, control messages and end of stream, and a table of the
// frames not yet done that both paths share, as the fan-out's members share
// its frames.
//
// send() numbers a frame and posts it, from the caller's memory (each path
// with its device's key: no copy), on every path that is up and has a
// credit; a path without one owes it. A path that owes frames posts the
// oldest first once it has a credit, and skips every frame another path
// has delivered meanwhile (they are in the receiver's completion queue, so
// its merge has them), so a slow path never holds the other back and owes
// nothing that is safe; a path that came back counts as delivering only
// once the receiver took it up (adopted()). Live, a path owes only the
// newest frame. A frame is
// done (on_done, once) when a path delivered it and no path still has it
// in flight, or when no path can deliver it any more (dropped).
//
// A path's failure is that path's: named once in the log, the path stopped
// (its frames in flight come back as not delivered on it, so the other path
// owes them if they were not delivered there), and the stream goes on over
// the other. Only the last path's failure is the stream's, thrown as one
// path's is. A receiver that leaves ends the stream (PeerLeft, as one
// path's).
//
// Per frame: one table entry written (the side data, few bytes, copied so a
// path that posts the frame later still has it), one FrameSender::send per
// path that posts it, no allocation, no lock. A wait for a credit or a
// delivery is one poll(2) over both paths (PathWait).
#include "stream/sender_impl.hpp"

#include "datapath/path_wait.hpp"
#include "rdmastream/error.hpp"
#include "stream/log_or_stderr.hpp"
#include "stream/peer_left.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <vector>

namespace rdmastream {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kPaths = 2;
constexpr int kFlowShift = 56; // a path's cookie: the flow above, the frame number below
constexpr std::uint64_t kNumberMask = (std::uint64_t{1} << kFlowShift) - 1;

char letter(std::size_t path) { return static_cast<char>('A' + path); }

class TwoPathSender final : public Sender::Impl {
public:
    TwoPathSender(std::array<std::unique_ptr<FrameSender>, kPaths> paths, const SenderConfig& c, TwoPathHooks hooks)
        : on_done_(c.on_done), log_(log_or_stderr(c.log)), hooks_(std::move(hooks)), wait_(c.poll_mode, c.waker.get(), hooks_.mail),
          max_in_flight_(c.max_in_flight) {
        if (paths[0] == nullptr) throw std::logic_error("TwoPathSender: path A founds the stream");
        founder_peer_ = paths[0]->peer();
        founder_ring_ = paths[0]->ring();
        founder_pd_ = paths[0]->shared_pd();
        // Live if this sender or the receiver (path A's ring advert) asked for it.
        policy_ = paths[0]->policy();
        for (std::size_t p = 0; p < kPaths; ++p) {
            Path& path = paths_[p];
            path.tx = std::move(paths[p]);
            path.device = p;
            path.up = path.tx != nullptr; // path B may come later
            path.was_up = path.up;
            path.adopted = path.up;       // the receiver's stream end was made with it
            if (path.up) {
                path.tx->set_on_done([this, p](std::uint64_t cookie, FrameFate fate) { done_on(p, cookie, fate); });
                path.report.device = path.tx->device(); // kept while the path is down
            }
        }
        open_flow(0, kDefaultSideDataBytes);
    }
    ~TwoPathSender() override { stop(); }

    // Goes on from where path A's connection streamed on its own (a
    // fan-out member's): the stream's next numbers, formats and clock.
    void go_on_at(const StreamSoFar& so_far, std::size_t device) {
        paths_[0].device = device;
        for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
            if (so_far.formats[flow] && flows_[flow].table.empty()) open_flow(flow, so_far.formats[flow]->max_side_data);
            if (flows_[flow].table.empty()) continue;
            flows_[flow].next = so_far.next[flow];
            flows_[flow].taken_over_at = so_far.next[flow];
            paths_[0].cursor[flow] = so_far.next[flow];
        }
        formats_ = so_far.formats;
        clock_ = so_far.clock;
        if (clock_) ++clock_generation_; // a path joining posts it
        // Its counts go on from path A's own (latency is summed from the paths').
        const StreamStats& before = paths_[0].tx->stats();
        stats_.frames = before.frames;
        stats_.bytes = before.bytes;
        stats_.drops = before.drops;
        stats_.credit_waits = before.credit_waits;
    }

    std::shared_ptr<ibv_pd> pd() const override { return founder_pd_.lock(); }
    // Every path's slots (a path not up yet counts as one up: the same
    // receiver's ring), plus one: a path whose wire died holds its slots'
    // worth of frames in flight until its RC retries run out (about 2 s),
    // and the other path must not run out of the caller's buffers meanwhile.
    std::size_t depth(std::uint8_t flow) const noexcept override {
        const Flow& f = flows_[flow];
        if (f.table.empty()) return 0;
        std::size_t slots = 0;
        for (const Path& path : paths_) {
            if (path.tx && path.tx->has_flow(flow)) slots = std::max<std::size_t>(slots, path.tx->ring(flow).slot_count);
        }
        if (max_in_flight_ > 0) slots = std::min<std::size_t>(slots, max_in_flight_);
        return std::min(f.table.size() - 1, kPaths * slots + 1);
    }
    std::uint32_t max_payload(std::uint8_t flow) const noexcept override {
        std::uint32_t m = 0;
        for (const Path& path : paths_) {
            if (path.up) m = m == 0 ? path.tx->max_payload(flow) : std::min(m, path.tx->max_payload(flow));
        }
        return m;
    }

    std::optional<std::uint64_t> send(std::span<const std::byte> payload, const FrameMemory::Impl& memory,
                                      const FrameMeta& meta, std::uint64_t cookie,
                                      std::chrono::milliseconds timeout) override {
        return guarded<std::optional<std::uint64_t>>([&]() -> std::optional<std::uint64_t> {
            check_streaming("send");
            Flow& f = flows_[meta.flow];
            if (f.table.empty()) {
                throw std::logic_error(fmt::format("send: flow {} has no format announced", meta.flow));
            }
            const auto now = Clock::now();
            const auto deadline = now + timeout;
            cut_silent(now, deadline); // a path gone silent goes before it holds the stream up
            if (joining_ > 0) advance_joins();
            // Lossless: until a path can post it now (its older frames posted
            // or skipped, a credit) and its table entry is free; nothing is
            // taken before, so a wake leaves the frame the caller's.
            const auto ready = [&](const Entry& e) {
                return e.done && (policy_ == Policy::kLive || can_post_now(meta.flow));
            };
            for (;;) {
                advance_all(meta.flow);
                const Entry& e = f.table[f.next & f.mask];
                if (ready(e)) break;
                const auto until = cut_silent(Clock::now(), deadline);
                if (ready(e)) break;
                if (Clock::now() >= deadline) {
                    throw TimeoutError(fmt::format("sender: no credit on either path for {} ms after {} frames: is "
                                                   "the receiver stuck?",
                                                   timeout.count(), f.next));
                }
                ++stats_.credit_waits;
                if (!wait_paths(until)) return std::nullopt;
            }
            Entry& e = f.table[f.next & f.mask]; // free (done): a refused frame leaves it so
            e.meta = meta;
            copy_side_data(e, meta);
            const std::uint64_t n = f.next++;
            e.payload = payload;
            e.memory = &memory;
            e.cookie = cookie;
            e.number = n;
            e.holds = 0;
            e.posted = 0;
            e.delivered = false;
            e.delivered_unadopted = false;
            e.done = false;
            ++undone_;
            ++stats_.frames;
            stats_.bytes += payload.size();
            advance_all(meta.flow);
            return n;
        });
    }

    void set_format(const StreamFormat& format, std::chrono::milliseconds timeout) override {
        guarded<int>([&] {
            check_streaming("set_format");
            catch_up(format.flow, timeout); // frames owed go in their own format
            for_each_up([&](Path& path) { path.tx->set_format(format, timeout); });
            if (flows_[format.flow].table.empty()) open_flow(format.flow, format.max_side_data);
            formats_[format.flow] = format; // for a path that comes back
            return 0;
        });
    }
    void set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) override {
        guarded<int>([&] {
            check_streaming("set_clock");
            for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
                if (!flows_[flow].table.empty()) catch_up(flow, timeout); // frames before it are not on it
            }
            for_each_up([&](Path& path) { path.tx->set_clock(anchor, timeout); });
            clock_ = anchor;
            ++clock_generation_; // a joining path posts it too
            return 0;
        });
    }
    void progress() override {
        guarded<int>([&] {
            if (state_ != SenderState::kStreaming) return 0;
            if (hooks_.mail != nullptr && hooks_.mail->pending()) take_joined();
            for (std::size_t p = 0; p < kPaths; ++p) {
                if (paths_[p].joining) joining_progress(p);
            }
            for_each_up([](Path& path) { path.tx->progress(); });
            for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
                if (!flows_[flow].table.empty()) advance_all(flow);
            }
            return 0;
        });
    }
    bool takes_frame_now(std::uint8_t flow) override {
        if (policy_ == Policy::kLossless) return true; // send() waits for a slot
        progress();
        if (state_ != SenderState::kStreaming) return true; // send() says why
        return can_post_now(flow);
    }
    void skip_frame(std::uint8_t flow) noexcept override {
        Flow& f = flows_[flow];
        if (f.table.empty()) return;
        // A dropped number every path skips (no on_done: nothing was handed over).
        Entry& e = f.table[f.next & f.mask];
        if (!e.done) return; // cannot happen live: an entry is free before its number is used
        e.number = f.next++;
        ++stats_.drops;
    }
    bool wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) override {
        return guarded<bool>([&] {
            const Flow& f = flows_[flow];
            if (number >= f.next) {
                throw std::logic_error(fmt::format("wait_done({}): that frame of flow {} was never sent", number, flow));
            }
            const auto deadline = Clock::now() + timeout;
            while (!done(flow, number)) {
                advance_all(flow);
                if (done(flow, number)) break;
                const auto until = cut_silent(Clock::now(), deadline);
                if (done(flow, number)) break;
                if (Clock::now() >= deadline) {
                    throw TimeoutError(fmt::format("sender: frame {} not delivered on either path within {} ms",
                                                   number, timeout.count()));
                }
                if (!wait_paths(until)) return false;
            }
            return true;
        });
    }
    void finish(std::chrono::milliseconds timeout) override {
        guarded<int>([&] {
            if (state_ != SenderState::kStreaming) return 0;
            const auto deadline = Clock::now() + timeout;
            // Every frame delivered on a path (or dropped), then each path's end.
            while (undone_ > 0) {
                for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
                    if (!flows_[flow].table.empty()) advance_all(flow);
                }
                if (undone_ == 0) break;
                const auto until = cut_silent(Clock::now(), deadline);
                if (undone_ == 0) break;
                if (Clock::now() >= deadline) {
                    throw TimeoutError(fmt::format("sender: {} frames not delivered on either path within {} ms",
                                                   undone_, timeout.count()));
                }
                wait_paths(until); // a wake does not end a finish: its timeout does
            }
            for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
                if (!flows_[flow].table.empty()) advance_all(flow); // every cursor past the last frame
            }
            for (std::size_t p = 0; p < kPaths; ++p) {
                if (paths_[p].joining) stop_joining(p); // not up before the end: it has nothing to end
            }
            for_each_up([&](Path& path) { path.tx->finish(timeout); });
            state_ = SenderState::kEnded;
            return 0;
        });
    }
    void stop() noexcept override {
        if (state_ == SenderState::kStopped) return;
        state_ = SenderState::kStopped;
        for (Path& path : paths_) {
            path.up = false;
            path.joining = false;
            if (path.tx) path.tx->stop(); // its frames in flight come back dropped on it
        }
        joining_ = 0;
        for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
            for (Entry& e : flows_[flow].table) {
                if (!e.done) fire(e, e.delivered ? FrameFate::kDelivered : FrameFate::kDropped);
            }
        }
    }
    StreamStats stats() const noexcept override {
        StreamStats s = stats_;
        for (const Path& path : paths_) { // a delivery's latency, on whichever path
            if (!path.tx) continue;
            const StreamStats& p = path.tx->stats();
            s.latency_samples += p.latency_samples;
            s.latency_sum += p.latency_sum;
            s.latency_max = std::max(s.latency_max, p.latency_max);
            s.latency_buckets += p.latency_buckets;
        }
        return s;
    }
    std::vector<ReceiverReport> receivers() const override { return {}; }
    std::vector<PathReport> paths() const override {
        std::vector<PathReport> out;
        for (std::size_t p = 0; p < kPaths; ++p) {
            PathReport r = paths_[p].report;
            r.name = letter(p);
            if (paths_[p].tx) r.peer = paths_[p].tx->peer(); // else the one it had, or none yet
            r.up = paths_[p].up;
            out.push_back(std::move(r));
        }
        return out;
    }

    // Path `p` back over a new connection (its FrameSender through the
    // handshake, the receiver's ring taken), posting with the keys of the
    // memory domain's device `device`. It starts at the rejoin point: live,
    // the next frame; lossless, the oldest frame not yet done (everything
    // before was delivered), so frames in flight on the other path when it
    // dies exist on this one too. Each flow's format and the clock anchor
    // go first, one control message at a time, without holding the stream
    // up (advance_join, from the stream's own calls and waits: a wait for
    // each acknowledgement here stalled every frame by a round trip per
    // flow at each join); the path is up once the last is posted. A path
    // that takes none within its acknowledgement limit is lost again.
    void attach(std::size_t p, std::unique_ptr<FrameSender> tx, std::size_t device) {
        Path& path = paths_.at(p);
        if (path.up || path.joining) throw std::logic_error("TwoPathSender::attach: the path is up or joining");
        tx->set_on_done([this, p](std::uint64_t cookie, FrameFate fate) { done_on(p, cookie, fate); });
        std::array<std::uint64_t, kMaxFlows> from{};
        for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
            const Flow& f = flows_[flow];
            if (f.table.empty()) continue;
            from[flow] = f.next;
            if (policy_ == Policy::kLossless) {
                for (std::uint64_t n = f.next > f.table.size() ? f.next - f.table.size() : 0; n < f.next; ++n) {
                    const Entry& e = f.table[n & f.mask];
                    if (e.number == n && !e.done) {
                        from[flow] = n;
                        break;
                    }
                }
            }
            tx->start_numbering_at(from[flow], flow);
        }
        path.tx = std::move(tx); // the lost connection's goes (stopped when it was lost)
        path.device = device;
        path.report.device = path.tx->device();
        path.cursor = from;
        path.adopted = false; // a new connection: trusted from its first credit
        path.joining = true;
        path.format_ids = {};
        path.format_posted = false;
        path.clock_sent = 0;
        ++joining_;
        advance_join(p);
    }
    // Path p over a new connection, whether or not the old one is known
    // lost: its peer (the same: only it can prove the join) may come back
    // before we see the old connection go. No loss line then.
    void replace(std::size_t p, std::unique_ptr<FrameSender> tx, std::size_t device) {
        if (paths_[p].up) park(p);
        if (paths_[p].joining) stop_joining(p); // its connection before, still joining
        attach(p, std::move(tx), device);
    }

    SenderState state() const noexcept override { return state_; }
    std::string leaving() const override { return leaving_; }
    Policy policy() const noexcept override { return policy_; }
    std::string peer() const override { return founder_peer_; }
    std::uint32_t ring_slots() const noexcept override { return founder_ring_.slot_count; }
    std::uint32_t ring_slot_size() const noexcept override { return founder_ring_.slot_size; }

private:
    struct Entry {
        std::span<const std::byte> payload;
        const FrameMemory::Impl* memory = nullptr; // each path posts with its device's key of it
        FrameMeta meta;
        std::uint64_t cookie = 0;
        std::uint64_t number = 0;
        std::array<SideData, kMaxSideDataEntries> side{}; // meta.side_data points here, their bytes into side_bytes
        std::uint8_t holds = 0;                            // paths with it in flight, a bit each
        std::uint8_t posted = 0;                           // paths that posted it, a bit each
        bool delivered = false;           // on a path the receiver takes: no other path owes it
        bool delivered_unadopted = false; // only on a path not yet taken up (adopted())
        bool done = true; // on_done fired, or the entry never used
        std::vector<std::byte> side_bytes; // capacity: the flow's max_side_data, reserved once
    };
    struct Flow {
        std::vector<Entry> table; // by frame number & mask; empty: no such flow yet
        std::uint64_t mask = 0;
        std::uint64_t next = 0; // frames numbered
        std::uint64_t taken_over_at = 0; // frames before: path A's own, from before go_on_at
    };
    struct Path {
        PathReport report;               // its counters (name, peer, up filled in by paths())
        std::unique_ptr<FrameSender> tx; // lost: stopped, kept until the path is back
        std::size_t device = 0;          // of the memory domain: the keys it posts with
        bool up = false;
        bool was_up = false; // up before: it comes "back", not "up"
        std::array<std::uint64_t, kMaxFlows> cursor{}; // its next frame to post or skip, per flow
        bool adopted = false; // its connection's frames are taken by the receiver (adopted())
        // Joining (attach): its connection takes each flow's format, then the
        // clock anchor, before it is up.
        bool joining = false;
        std::array<std::uint32_t, kMaxFlows> format_ids{}; // posted to it, per flow
        bool format_posted = false;  // one posted, not yet settled
        std::uint64_t clock_sent = 0; // clock_generation_ posted to it (0: none)
    };

    // A flow's table: room for both paths' slots and the frames a path may owe.
    void open_flow(std::uint8_t flow, std::uint32_t max_side_data) {
        Flow& f = flows_[flow];
        const std::size_t size = std::bit_ceil(std::size_t{2} * kMaxSenderSlots + 2);
        f.table.resize(size);
        for (Entry& e : f.table) e.side_bytes.reserve(max_side_data);
        f.mask = size - 1;
    }

    void copy_side_data(Entry& e, const FrameMeta& meta) {
        std::size_t total = 0;
        for (const SideData& s : meta.side_data) total += s.bytes.size();
        if (meta.side_data.size() > kMaxSideDataEntries || total > e.side_bytes.capacity()) {
            throw UserError(fmt::format("a frame's side data ({} entries, {} bytes) exceeds what its format declared "
                                        "({} bytes)",
                                        meta.side_data.size(), total, e.side_bytes.capacity()));
        }
        e.side_bytes.resize(total); // within the capacity reserved: no allocation
        std::size_t at = 0;
        for (std::size_t i = 0; i < meta.side_data.size(); ++i) {
            const SideData& s = meta.side_data[i];
            if (!s.bytes.empty()) std::memcpy(e.side_bytes.data() + at, s.bytes.data(), s.bytes.size());
            e.side[i] = SideData{s.kind, std::span<const std::byte>(e.side_bytes.data() + at, s.bytes.size())};
            at += s.bytes.size();
        }
        e.meta.side_data = std::span<const SideData>(e.side.data(), meta.side_data.size());
    }

    // Whether a path could post the flow's next frame now.
    bool can_post_now(std::uint8_t flow) const noexcept {
        for (const Path& path : paths_) {
            if (path.up && path.cursor[flow] == flows_[flow].next && path.tx->credits_available(flow) > 0) return true;
        }
        return false;
    }

    // Each path up posts what it owes of the flow, oldest first, while it
    // has credits, skipping what another path delivered (and, live, all
    // but the newest).
    void advance_all(std::uint8_t flow) {
        for (std::size_t p = 0; p < kPaths; ++p) {
            if (!paths_[p].up) continue;
            try {
                advance(p, flow);
            } catch (const PeerLeft&) {
                throw;
            } catch (...) {
                lose(p, std::current_exception());
            }
        }
    }
    void advance(std::size_t p, std::uint8_t flow) {
        Path& path = paths_[p];
        Flow& f = flows_[flow];
        std::uint64_t& cursor = path.cursor[flow];
        while (cursor < f.next) {
            const std::uint64_t n = cursor;
            Entry& e = f.table[n & f.mask];
            const bool gone = e.number != n || e.done || e.delivered;
            const bool stale = policy_ == Policy::kLive && n + 1 < f.next;
            if (gone || stale) {
                path.tx->skip_frame(flow);
                ++cursor;
                ++path.report.frames_lost; // owed here, delivered elsewhere (or dropped)
                if (!gone) settle(e); // live: perhaps no path will post it now
                continue;
            }
            if (path.tx->credits_available(flow) == 0) return; // owes it
            const std::optional<std::uint64_t> posted = path.tx->send(e.payload, e.memory->lkey(path.device), e.meta,
                                                                      (std::uint64_t{flow} << kFlowShift) | n,
                                                                      std::chrono::milliseconds(0));
            if (posted != n) {
                throw std::logic_error(fmt::format("path {} numbered frame {} of flow {} as {}", letter(p), n, flow,
                                                   posted ? std::to_string(*posted) : "nothing"));
            }
            e.holds = static_cast<std::uint8_t>(e.holds | (1u << p));
            e.posted = static_cast<std::uint8_t>(e.posted | (1u << p));
            ++cursor;
        }
    }

    // Lossless: until every path up has posted (or skipped) each frame it
    // owes of the flow; live: what it owes is dropped.
    void catch_up(std::uint8_t flow, std::chrono::milliseconds timeout) {
        const auto deadline = Clock::now() + timeout;
        for (;;) {
            advance_all(flow);
            bool owed = false;
            for (const Path& path : paths_) owed = owed || (path.up && path.cursor[flow] < flows_[flow].next);
            if (!owed) return;
            if (policy_ == Policy::kLive) {
                for (Path& path : paths_) {
                    while (path.up && path.cursor[flow] < flows_[flow].next) {
                        path.tx->skip_frame(flow);
                        settle(flows_[flow].table[path.cursor[flow]++ & flows_[flow].mask]);
                    }
                }
                return;
            }
            if (Clock::now() >= deadline) {
                throw TimeoutError(fmt::format("sender: a path still owes frames of flow {} after {} ms", flow,
                                               timeout.count()));
            }
            wait_paths(deadline);
        }
    }

    bool done(std::uint8_t flow, std::uint64_t number) const noexcept {
        const Flow& f = flows_[flow];
        const Entry& e = f.table[number & f.mask];
        return e.number != number || e.done;
    }

    // A path's on_done: that path has the frame no more.
    void done_on(std::size_t p, std::uint64_t cookie, FrameFate fate) {
        const auto flow = static_cast<std::uint8_t>(cookie >> kFlowShift);
        const std::uint64_t n = cookie & kNumberMask;
        Flow& f = flows_[flow];
        if (n < f.taken_over_at) { // posted before this sender took its connection over: the caller's cookie
            if (on_done_) on_done_(cookie, fate);
            return;
        }
        Entry& e = f.table[n & f.mask];
        if (e.number != n || e.done) return;
        e.holds = static_cast<std::uint8_t>(e.holds & ~(1u << p));
        if (fate == FrameFate::kDelivered && adopted(p)) {
            if (!e.delivered) ++paths_[p].report.frames_first;
            e.delivered = true;
        } else if (fate == FrameFate::kDelivered) {
            e.delivered_unadopted = true;
        } else {
            ++paths_[p].report.frames_lost;
        }
        // Delivered on a path the receiver has not taken up yet: in its ring,
        // but its stream end may give the frame up before it attaches the
        // connection (it sees that path down), so the other path still owes it.
        settle(e);
    }

    // Whether the receiver takes path p's frames: its stream end returned a
    // credit on this connection. Until then, a frame delivered only there
    // lets no other path skip it. (A path of the opening is one too: the
    // first path's frames count from its first credit, as path A carries
    // everything until then anyway.)
    bool adopted(std::size_t p) {
        Path& path = paths_[p];
        if (!path.adopted && path.tx->credit_messages() > 0) path.adopted = true;
        return path.adopted;
    }

    // on_done once no path has the frame in flight and it was delivered,
    // or no path up can still post it.
    void settle(Entry& e) {
        if (e.done || e.holds != 0) return;
        if (e.delivered) {
            fire(e, FrameFate::kDelivered);
            return;
        }
        const std::uint8_t flow = e.meta.flow;
        for (const Path& path : paths_) {
            if (path.up && path.cursor[flow] <= e.number) return; // it still owes it
        }
        if (e.delivered_unadopted) { // in the ring of a path not yet taken up: the best there is
            fire(e, FrameFate::kDelivered);
            return;
        }
        // Counted as sent when taken; it is a drop now, not both (frames +
        // drops stays the numbers used, as a receiver's frames + gaps).
        --stats_.frames;
        stats_.bytes -= e.payload.size();
        ++stats_.drops;
        fire(e, FrameFate::kDropped);
    }
    void fire(Entry& e, FrameFate fate) {
        if (fate == FrameFate::kDelivered && std::has_single_bit(e.posted)) {
            ++paths_[static_cast<std::size_t>(std::countr_zero(e.posted))].report.frames_only;
        }
        e.done = true;
        --undone_;
        if (on_done_) on_done_(e.cookie, fate);
    }

    // A path whose writes go unacknowledged (its link, NIC or peer gone)
    // holds the frames in flight there, and the caller's buffers under
    // them, until its RC retries run out (about 2 s on the bed, the QP's
    // timeout and retry count on a NIC); on the bed its retransmissions
    // also take the CPU the other path needs. Such a path is lost now
    // (named, stopped, redialled) once its oldest signalled write (the NIC
    // acknowledges those as they land, whatever the receiving program does
    // with the frame) is out for longer than kLagFloor or kLagFactor times
    // the mean acknowledgement time (this path's or the other's, the
    // longer: a connection just back has few), whichever is longer, while
    // the other path delivered a write posted after it: the receiver is
    // there and takes frames, so the silence is this path's. Judged once
    // the two have kLagSamples acknowledgements between them; never the
    // last path up. Per frame, while no write is out that long: one read of each
    // path's oldest write, no clock read (the caller's `now`). Returns
    // when to look again (the deadline at most).
    Clock::time_point cut_silent(Clock::time_point now, Clock::time_point deadline) {
        for (std::size_t p = 0; p < kPaths; ++p) {
            Path& path = paths_[p];
            const Path& other = paths_[kPaths - 1 - p];
            if (!path.up || !other.up) continue;
            const std::optional<Clock::time_point> oldest = path.tx->oldest_unacknowledged();
            const FrameSender::AckTime mine = path.tx->ack_time();
            const FrameSender::AckTime theirs = other.tx->ack_time();
            if (!oldest || mine.samples + theirs.samples < kLagSamples) continue;
            const std::chrono::nanoseconds usual = std::max(mine.mean, theirs.mean);
            const auto limit = std::max<Clock::duration>(kLagFloor, kLagFactor * usual);
            if (now - *oldest < limit) {
                deadline = std::min(deadline, *oldest + limit);
                continue;
            }
            const std::optional<Clock::time_point> since = path.tx->oldest_unacknowledged_signalled();
            if (!since) continue; // its next signalled write decides
            if (now - *since < limit) {
                deadline = std::min(deadline, *since + limit);
                continue;
            }
            if (other.tx->last_delivered_posted() <= *since) continue;
            const auto out_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - *since).count();
            lose(p, std::make_exception_ptr(ConnectionError(fmt::format(
                        "sender: no acknowledgement for {} ms (its usual {:.1f} ms) while path {} delivers what "
                        "was sent after: its link, NIC or peer answers no more",
                        out_ms, std::chrono::duration<double, std::milli>(usual).count(), letter(kPaths - 1 - p)))));
        }
        return deadline;
    }

    // One wait over both paths (a credit, a delivery, a hang-up) until
    // `deadline` or a path's own timer; false when the waker woke it.
    bool wait_paths(Clock::time_point deadline) {
        std::array<Datapath*, kPaths> datapaths{};
        std::array<std::span<ibv_wc>, kPaths> outs{};
        std::array<std::size_t, kPaths> which{};
        std::size_t n = 0;
        auto until = deadline;
        for (std::size_t p = 0; p < kPaths; ++p) {
            Path& path = paths_[p];
            if (!path.up && !path.joining) continue; // a joining path's acknowledgements wake us too
            datapaths[n] = &path.tx->datapath();
            outs[n] = path.tx->completions();
            until = std::min(until, path.tx->timer(deadline));
            which[n++] = p;
        }
        const PathWait::Woke w = wait_.wait(std::span<Datapath* const>(datapaths.data(), n),
                                            std::span<const std::span<ibv_wc>>(outs.data(), n), until);
        if (w.kind == PathWait::Woke::kWoken) return false;
        if (w.kind == PathWait::Woke::kMail) {
            take_joined();
            return true;
        }
        const auto now = Clock::now();
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t p = which[i];
            if (!paths_[p].up && !paths_[p].joining) continue;
            try {
                if (w.failed[i]) std::rethrow_exception(w.failed[i]);
                if (w.kind == PathWait::Woke::kPaths && w.paths[i]) paths_[p].tx->waited(*w.paths[i]);
                paths_[p].tx->timer_passed(now); // a keepalive due, an ack overdue
            } catch (const PeerLeft&) {
                throw;
            } catch (const std::exception& e) {
                if (!paths_[p].joining) {
                    lose(p, std::current_exception());
                    continue;
                }
                join_failed(p, e);
            }
        }
        if (joining_ > 0) advance_joins();
        return true;
    }

    // A joining path's next step: each flow's format (one control message
    // in flight at a time, each settled before the next: a flow's slots come
    // with its format), then the clock anchor, then it is up, its owed
    // frames posted. Never waits. Its failure is its own: named, the path
    // lost again, the dialler told.
    void advance_join(std::size_t p) {
        Path& path = paths_[p];
        if (!path.joining) return;
        try {
            if (path.format_posted && !path.tx->format_settled()) return;
            path.format_posted = false;
            for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
                if (formats_[flow] && path.format_ids[flow] != formats_[flow]->id) {
                    path.tx->begin_format(*formats_[flow]);
                    path.format_ids[flow] = formats_[flow]->id;
                    path.format_posted = true;
                    return;
                }
            }
            if (clock_ && path.clock_sent != clock_generation_) {
                if (!path.tx->try_post_clock(*clock_)) return; // the last format's message still out
                path.clock_sent = clock_generation_;
            }
        } catch (const PeerLeft&) {
            throw;
        } catch (const std::exception& e) {
            join_failed(p, e);
            return;
        }
        path.joining = false;
        --joining_;
        const bool back = path.was_up;
        path.was_up = true;
        ++path.report.ups;
        path.up = true;
        log_(fmt::format("path {} ({}) {}; streaming on paths A and B", letter(p), path.tx->peer(), back ? "back" : "up"));
        for (std::uint8_t flow = 0; flow < kMaxFlows; ++flow) {
            if (!flows_[flow].table.empty()) advance_all(flow);
        }
    }
    void advance_joins() {
        for (std::size_t p = 0; p < kPaths; ++p) advance_join(p);
    }
    // progress() for a joining path: its completions (the format's
    // acknowledgement) taken, then its next step.
    void joining_progress(std::size_t p) {
        try {
            paths_[p].tx->progress();
        } catch (const PeerLeft&) {
            throw;
        } catch (const std::exception& e) {
            join_failed(p, e);
            return;
        }
        advance_join(p);
    }
    // A joining path's failure: named, its connection stopped, the dialler
    // told (the path is lost again).
    void join_failed(std::size_t p, const std::exception& e) {
        log_(fmt::format("path {}: a connection back failed: {}", letter(p), e.what()));
        stop_joining(p);
        if (hooks_.lost) hooks_.lost(p);
    }
    // A joining path's connection, given up (a failure, a newer one, the end).
    void stop_joining(std::size_t p) {
        Path& path = paths_[p];
        path.joining = false;
        --joining_;
        path.tx->stop();
    }

    // Paths that came back (TwoPathHooks::take_joined), attached.
    void take_joined() {
        if (hooks_.mail != nullptr) hooks_.mail->take();
        if (!hooks_.take_joined) return;
        std::size_t p = 0, device = 0;
        while (std::unique_ptr<FrameSender> tx = hooks_.take_joined(p, device)) {
            try {
                replace(p, std::move(tx), device);
            } catch (const PeerLeft&) {
                throw;
            } catch (const std::exception& e) {
                log_(fmt::format("path {}: a connection back failed: {}", letter(p), e.what()));
                if (hooks_.lost) hooks_.lost(p);
            }
        }
    }
    // A path down: stopped (its frames in flight come back as not
    // delivered on it, done_on), and the frames only it owed settled (the
    // other path owes them too, or they are done).
    // A path whose device is going away also lets go of everything on it
    // (its connection, then the memory's keys there: release_device).
    void park(std::size_t p) {
        Path& path = paths_[p];
        path.up = false;
        path.tx->stop();
        for (Flow& f : flows_) {
            for (Entry& e : f.table) settle(e);
        }
        if (path.tx->device_removed() && hooks_.release_device) {
            path.report.peer = path.tx->peer();
            hooks_.release_device(path.device); // the memory's keys and the pool's PD first,
            path.tx.reset();                    // then the connection: its PD, then its id
        }
    }

    template <typename F>
    void for_each_up(F&& f) {
        for (std::size_t p = 0; p < kPaths; ++p) {
            if (!paths_[p].up) continue;
            try {
                f(paths_[p]);
            } catch (const PeerLeft&) {
                throw;
            } catch (...) {
                lose(p, std::current_exception());
            }
        }
    }

    // A path failed: stopped, named once; the last one's failure is the stream's.
    void lose(std::size_t p, const std::exception_ptr& error) {
        Path& path = paths_[p];
        path.up = false;
        std::size_t other = kPaths;
        for (std::size_t q = 0; q < kPaths; ++q) {
            if (q != p && paths_[q].up) other = q;
        }
        if (other == kPaths) {
            state_ = SenderState::kFailed;
            std::rethrow_exception(error);
        }
        std::string why;
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            why = e.what();
        }
        ++path.report.downs;
        log_(fmt::format("path {} ({}) lost: {}; streaming on path {}", letter(p), path.tx->peer(), why, letter(other)));
        park(p);
        if (hooks_.lost) hooks_.lost(p);
    }

    void check_streaming(const char* call) const {
        if (state_ == SenderState::kFailed) {
            throw ConnectionError(fmt::format("sender: {}() after the stream failed on both paths", call));
        }
        if (state_ != SenderState::kStreaming && state_ != SenderState::kLeft) {
            throw std::logic_error(fmt::format("sender: {}() after the stream ended", call));
        }
    }

    // Runs a call; the receiver leaving ends the stream (kLeft, leaving()).
    template <typename R, typename F>
    R guarded(F&& f) {
        if (state_ == SenderState::kLeft) return R{};
        try {
            return f();
        } catch (const PeerLeft& e) {
            leaving_ = e.what();
            state_ = SenderState::kLeft;
            return R{};
        }
    }

    // cut_silent: a path is lost once its oldest signalled write is out
    // this long, and this many times the mean acknowledgement time, judged
    // once the paths have this many acknowledgements between them.
    static constexpr std::chrono::milliseconds kLagFloor{100};
    static constexpr int kLagFactor = 4;
    static constexpr std::uint64_t kLagSamples = 2;
    FrameDoneFn on_done_;
    std::function<void(const std::string&)> log_;
    TwoPathHooks hooks_;
    PathWait wait_;
    std::uint32_t max_in_flight_; // SenderConfig::max_in_flight: per path
    Policy policy_ = Policy::kLossless;
    std::array<Path, kPaths> paths_;
    std::array<Flow, kMaxFlows> flows_;
    std::array<std::optional<StreamFormat>, kMaxFlows> formats_; // each flow's in force
    std::optional<ClockAnchor> clock_;
    std::uint64_t clock_generation_ = 0; // set_clock calls, for a joining path
    std::size_t joining_ = 0;            // paths joining (attach)
    std::uint64_t undone_ = 0; // frames numbered whose on_done has not fired
    StreamStats stats_;
    SenderState state_ = SenderState::kStreaming;
    std::string leaving_;
    // What the stream was opened with over path A, which may go (and its
    // device) and come back: the stream's peer, ring and first PD.
    std::string founder_peer_;
    wire::RingAdvert founder_ring_;
    std::weak_ptr<ibv_pd> founder_pd_; // not kept: a removed device's PD must go
};

} // namespace

std::unique_ptr<Sender::Impl> two_path_sender(std::array<std::unique_ptr<FrameSender>, 2> paths,
                                              const SenderConfig& c, TwoPathHooks hooks) {
    return std::make_unique<TwoPathSender>(std::move(paths), c, std::move(hooks));
}

void attach_path(Sender::Impl& sender, std::size_t path, std::unique_ptr<FrameSender> tx, std::size_t device) {
    dynamic_cast<TwoPathSender&>(sender).replace(path, std::move(tx), device);
}

std::unique_ptr<Sender::Impl> two_path_sender_at(std::unique_ptr<FrameSender> tx, std::size_t device,
                                                 const StreamSoFar& so_far, const SenderConfig& c) {
    auto s = std::make_unique<TwoPathSender>(std::array<std::unique_ptr<FrameSender>, 2>{std::move(tx), nullptr}, c,
                                             TwoPathHooks{});
    s->go_on_at(so_far, device);
    return s;
}

} // namespace rdmastream
