// SPDX-License-Identifier: LGPL-2.1-or-later
// The receiver's merge of two paths' copies of one stream (docs/design/
// two-paths.md, Decision 3): each frame handed out once, in order within its
// flow, from whichever path delivered it first; the other copy reported as a
// duplicate so its slot goes back. It decides from frame numbers alone: the
// frames, slots and comparisons of copies are the caller's (a handle per
// arrival names them).
//
// Per flow it keeps `next`, one past the last frame handed out, and takes
// each path's arrivals in that path's order (RC delivers a path's frames in
// order, and each path's FrameReceiver has checked that numbers rise):
//   number < next   a second copy (or, after a gap, a late one): kDuplicate;
//   number == next  the first good copy: kFrame, next = number + 1;
//   number > next   if no path that is up can still bring `next` (each has
//                   brought a number past it), none will: the frames up to
//                   it came on no path, a gap (kGap), as a live sender's
//                   drop is today (a sender skips on one path only what
//                   another delivered, so a lossless sender leaves none; the
//                   receiver cannot tell a live sender, whose drops every
//                   path skips). If a path might still bring it: lossless
//                   waits; live waits at most `skew` from the first arrival
//                   past it, then a gap.
//
// Counters per path, after ST 2022-7 and MTL: frames handed out first from
// it, duplicates it brought, frames missing from its sequence.
//
// Per frame: no allocation (each flow's queues are sized once, by
// add_flow), no syscall, no lock. One thread (the stream end's).
#pragma once

#include "rdmastream/format.hpp"
#include "rdmastream/policy.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace rdmastream {

class PathMerge {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::size_t kMaxPaths = 2;

    struct Out {
        enum Kind {
            kFrame,     // hand `handle` out: frame `number`, first on `path`
            kDuplicate, // give `handle` back: a copy of frame `number` handed out already (or given up on)
            kGap,       // live: frames [number, gap_end) came on no path in time
        } kind = kFrame;
        std::size_t path = 0;
        std::uint64_t number = 0;
        std::uint32_t handle = 0;
        std::uint64_t gap_end = 0;
    };

    struct PathCounters {
        std::uint64_t first = 0;      // frames handed out from this path
        std::uint64_t duplicates = 0; // copies it brought of frames handed out already
        std::uint64_t missing = 0;    // numbers its sequence skipped (the other path's, or lost)
    };

    PathMerge(std::size_t paths, Policy policy, std::chrono::nanoseconds skew);

    // A flow's queues: at most `capacity` arrivals waiting per path (its
    // slots on that path). Control path; before the flow's first arrival.
    void add_flow(std::uint8_t flow, std::size_t capacity);
    // A path's frame `number` of `flow`, in the path's order, whose slot the
    // caller names `handle`. Throws std::logic_error past add_flow's capacity
    // (a caller holds no more frames than a path has slots).
    void arrive(std::size_t path, std::uint8_t flow, std::uint64_t number, std::uint32_t handle, Clock::time_point now);
    // A path lost (or back): a path that is down brings nothing more, so
    // nothing waits for it. What it brought before stays queued.
    void set_up(std::size_t path, bool up);

    // What to do next for `flow`, or nullopt: wait for an arrival (or, live,
    // until deadline()).
    std::optional<Out> next(std::uint8_t flow, Clock::time_point now);
    // Live: when a frame waited for becomes a gap, if one is waited for.
    std::optional<Clock::time_point> deadline(std::uint8_t flow) const;

    std::uint64_t next_number(std::uint8_t flow) const noexcept { return flows_[flow].next; }
    const PathCounters& counters(std::size_t path) const noexcept { return counters_[path]; }

private:
    struct Arrival {
        std::uint64_t number = 0;
        std::uint32_t handle = 0;
        Clock::time_point at{};
    };
    // One path's arrivals of one flow, in its order: a ring sized by add_flow.
    struct Queue {
        std::vector<Arrival> ring;
        std::size_t head = 0, count = 0;
        std::optional<std::uint64_t> last; // the last number it brought
        const Arrival* front() const noexcept { return count ? &ring[head] : nullptr; }
        void pop() noexcept {
            head = (head + 1) % ring.size();
            --count;
        }
    };
    struct Flow {
        std::uint64_t next = 0;
        std::array<Queue, kMaxPaths> queues;
    };
    // Whether path p can no longer bring frame `number` of the flow.
    bool past(const Flow& f, std::size_t p, std::uint64_t number) const noexcept;

    std::size_t paths_;
    Policy policy_;
    std::chrono::nanoseconds skew_;
    std::array<bool, kMaxPaths> up_{};
    std::array<Flow, kMaxFlows> flows_{};
    std::array<PathCounters, kMaxPaths> counters_{};
};

} // namespace rdmastream
