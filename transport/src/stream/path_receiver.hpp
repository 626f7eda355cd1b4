// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiving end of one stream over two paths (docs/design/two-paths.md,
// Decisions 3 and 5): a FrameReceiver per path, each checking all of its own
// connection (immediates, headers, numbers, formats, limits), and the merge
// (path_merge.hpp) deciding between their copies. Each frame is handed out
// once, in order within its flow, from the path that brought it first; the
// other copy is compared with it and its slot goes back at once.
//
// A path's failure (its connection lost, a failed completion, a protocol
// violation, silence for `path_silence` while another path is up) is that
// path's: named once in the log ("path B (198.18.1.2:40123) lost: ...;
// streaming on path A") and parked, its queued frames still handed out in
// order; only the last path's failure is the stream's, thrown as one path's
// is today. The stream ends once every path that is up has ended; after the
// first end, the others get `end_grace`.
//
// A path back (its peer joined again) is attach()ed: a new FrameReceiver on
// a new connection, while frames of the old one may still be held.
//
// Slots: each path has two ranges of slot numbers, one per connection it
// may have alive at once (the one up and the one before, until its last
// frame is released): range r's frames are numbered from r * capacity (a
// connection's slot_capacity()), so a ReceivedFrame's 16-bit slot names its
// connection, and release() takes it back to the right ring. slot_numbers()
// is what the caller's tables by slot need.
//
// Per frame: no allocation (frames waiting in the merge sit in tables sized
// once per path, a flow's merge queues once per flow), no syscall but the
// paths' own, and one wait over both paths (PathWait) when neither has
// anything. A duplicate costs a header comparison and, while the consumer
// still holds the first copy, a memcmp of its payload and side data
// (compare_payloads). Thread rule: FrameReceiver's.
#pragma once

#include "datapath/path_wait.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/path_merge.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rdmastream {

class PathReceiver {
public:
    static constexpr std::size_t kMaxPaths = PathMerge::kMaxPaths;

    struct Options {
        // The receiver asked for a live stream: a frame no path brought
        // within `skew` of a later one is a gap. Otherwise a frame is
        // waited for while a path that is up may still bring it (a live
        // sender's drops, missing on every path, are gaps at once).
        bool live = false;
        std::chrono::nanoseconds skew = std::chrono::milliseconds(50);
        // A path silent (no frame, no keepalive: the sender sends one a
        // second) this long while another path is up is lost.
        std::chrono::milliseconds path_silence = std::chrono::seconds(3);
        // After the first path's end of stream, how long the others have
        // to end theirs before they are let go.
        std::chrono::milliseconds end_grace = std::chrono::seconds(1);
        bool compare_payloads = true;
        PollMode poll_mode = PollMode::kEvent;
        Waker* waker = nullptr; // the paths' datapaths' waker; must outlive this
        // A path lost, a copy that differs: one line each. Empty: stderr.
        std::function<void(const std::string&)> log;
        // Paths coming back (stream/path_rejoin.hpp): `mail` is rung when
        // one waits, `take_joined` hands it over (nullptr: none), `lost`
        // is told each loss. Any may be empty.
        Waker* mail = nullptr;
        std::function<std::unique_ptr<FrameReceiver>(std::size_t& path)> take_joined;
        // Told when a path's connection went with its RDMA device (its ring
        // let go of: PathRejoin::device_gone).
        std::function<void()> device_gone;
        std::function<void(std::size_t path)> lost;
    };

    struct Counters {
        PathMerge::PathCounters merge;      // first, duplicates, missing
        std::uint64_t copies_differ = 0;    // a second copy unlike the first (header, payload or side data)
        std::uint64_t copies_unchecked = 0; // a second copy after the first was released: headers only
        std::uint64_t downs = 0;            // times this path was lost
        std::uint64_t ups = 0;              // times it came back (attach)
    };

    // Path A's receiver and path B's, each through its handshake with its
    // ring announced, made with the same RingConfig. Path B's may be null:
    // it starts lost, and comes with attach().
    PathReceiver(std::array<std::unique_ptr<FrameReceiver>, kMaxPaths> paths, const Options& options);
    // Path `path` back, over a new connection through its handshake (made
    // with the same RingConfig): it is up again, its frames merged from
    // its first. A path still up is replaced (its peer is back before we saw
    // it go). False (nothing changed) while frames of the connection before
    // its last are still held.
    bool attach(std::size_t path, std::unique_ptr<FrameReceiver> rx);
    PathReceiver(const PathReceiver&) = delete;
    PathReceiver& operator=(const PathReceiver&) = delete;
    ~PathReceiver();

    using Arrival = FrameReceiver::Arrival;
    // FrameReceiver::wait_frame over both paths: `idle` bounds the silence
    // of the last path up.
    Arrival wait_frame(std::chrono::milliseconds idle);
    void release(std::uint16_t slot);
    // Leaves on every path still up (FrameReceiver::leave).
    void leave() noexcept;

    const StreamStats& stats() const noexcept { return stats_; }
    ReceiverState state() const noexcept { return state_; }
    bool up(std::size_t path) const noexcept { return paths_[path].up; }
    Counters counters(std::size_t path) const noexcept {
        Counters c = paths_[path].counters;
        c.merge = merge_.counters(path);
        return c;
    }
    // A path's connection now (up or lost; null before its first): its ring, format, peer.
    const FrameReceiver* path(std::size_t p) const noexcept { return ranges_[paths_[p].range].rx.get(); }
    // Slot numbers release() may be given: 0 .. slot_numbers() - 1.
    std::uint32_t slot_numbers() const noexcept { return static_cast<std::uint32_t>(kRanges) * base_; }
    // Where a connection's slot numbers start: range r's at r * slot_base().
    std::uint32_t slot_base() const noexcept { return base_; }
    static char letter(std::size_t path) noexcept { return static_cast<char>('A' + path); }
    // Each path's counters, as the public API reports them, into `out`
    // (one entry per path): no allocation once `out` has held them, its
    // names' strings keeping their room, so a caller may ask as often as
    // it publishes (rdmasrc: every 100 ms).
    void report(std::vector<PathReport>& out) const;
    std::vector<PathReport> report() const;

private:
    // A connection and its range of slot numbers; path p has ranges 2p and 2p + 1.
    static constexpr std::size_t kRanges = 2 * kMaxPaths;
    struct Range {
        std::unique_ptr<FrameReceiver> rx;
        std::size_t frames = 0; // of it in the merge or held by the consumer
    };
    struct Path {
        std::size_t range = 0; // its connection now
        bool up = false;
        bool ended = false;
        Counters counters;
        // Its latest connection's peer and device (report()): named once,
        // when it comes; kept when it is lost or goes with its device.
        std::string peer, device;
    };
    // The first copy of a recent frame, for comparing the second with.
    struct Winner {
        std::uint64_t number = ~std::uint64_t{0};
        FrameHeader header;
        std::uint32_t side_bytes = 0;
        std::size_t path = 0;
        std::uint32_t slot = 0; // in our numbering
    };
    static constexpr std::size_t kWinners = 64; // per flow: copies come microseconds apart

    // Takes what every path has without waiting; true if anything came.
    bool take_all();
    // What the merge says for some flow, acted on; a frame to hand out, or nullopt.
    std::optional<ReceivedFrame> merged(std::chrono::steady_clock::time_point now);
    ReceivedFrame hand_out(std::size_t path, std::uint32_t slot);
    void give_back(std::size_t path, std::uint8_t flow, std::uint64_t number, std::uint32_t slot);
    // A slot of ours back to its connection's ring; a connection no longer
    // a path's, with nothing of it left out, goes.
    void release_to_ring(std::uint32_t slot);
    // Whether range r's connection may go once nothing of it is out: lost
    // and replaced, or lost with its device (which can go, and come back,
    // only once the ring registered there does), unless it is the only
    // connection left (its ring and formats are the stream's until the end).
    bool may_go(std::size_t r) const noexcept;
    void go_if_done(std::size_t r); // r's connection goes if it may and nothing of it is out
    FrameReceiver& rx(std::size_t path) noexcept { return *ranges_[paths_[path].range].rx; }
    void compare(const ReceivedFrame& copy, std::size_t path, const Winner& w);
    // A path failed with `error`: parked, logged; rethrown if it was the last.
    void lose(std::size_t path, const std::exception_ptr& error);
    // Takes every path that came back (Options::take_joined).
    void take_joined();
    // The wait's deadline passed: a path silent too long is lost, a path
    // that outstayed another's end is let go (a live gap is the merge's).
    void time_out(std::chrono::milliseconds idle);
    std::size_t paths_up() const noexcept;
    std::chrono::steady_clock::time_point deadline(std::chrono::milliseconds idle) const;

    Options options_;
    std::function<void(const std::string&)> log_; // options_.log, or stderr
    std::array<Range, kRanges> ranges_;
    std::array<Path, kMaxPaths> paths_;
    std::vector<ReceivedFrame> waiting_; // by our slot: frames the merge holds
    std::vector<std::uint64_t> held_;    // by our slot: frame number + 1 while the consumer holds it, else 0
    std::size_t count_ = 0; // paths this stream has
    std::uint32_t base_ = 0;
    PathMerge merge_;
    PathWait wait_;
    std::array<bool, kMaxFlows> flow_seen_{};
    std::array<std::uint8_t, kMaxFlows> flows_{}; // the flows seen, in order of their first frame
    std::size_t flow_count_ = 0;
    std::array<std::uint16_t, kMaxFlows> last_format_{};
    std::vector<std::array<Winner, kWinners>> winners_; // by flow id
    std::optional<std::chrono::steady_clock::time_point> first_end_;
    StreamStats stats_;
    std::uint64_t last_arrival_ns_ = 0;
    bool logged_difference_ = false;
    ReceiverState state_ = ReceiverState::kStreaming;
};

} // namespace rdmastream
