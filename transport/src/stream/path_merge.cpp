// SPDX-License-Identifier: LGPL-2.1-or-later
// Per-frame code: see path_merge.hpp.
#include "stream/path_merge.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace rdmastream {

PathMerge::PathMerge(std::size_t paths, Policy policy, std::chrono::nanoseconds skew)
    : paths_(paths), policy_(policy), skew_(skew) {
    if (paths == 0 || paths > kMaxPaths) throw std::logic_error("PathMerge: one or two paths");
    for (std::size_t p = 0; p < paths_; ++p) up_[p] = true;
}

void PathMerge::add_flow(std::uint8_t flow, std::size_t capacity) {
    for (std::size_t p = 0; p < paths_; ++p) flows_.at(flow).queues[p].ring.resize(capacity);
}

void PathMerge::arrive(std::size_t path, std::uint8_t flow, std::uint64_t number, std::uint32_t handle,
                       Clock::time_point now) {
    Queue& q = flows_[flow].queues[path];
    if (q.count == q.ring.size()) {
        throw std::logic_error(fmt::format("PathMerge: path {} brought frame {} of flow {} with {} of its frames "
                                           "waiting already",
                                           path, number, flow, q.count));
    }
    if (q.last && number > *q.last + 1) counters_[path].missing += number - *q.last - 1;
    if (!q.last && number > 0) counters_[path].missing += number; // joined late, or its first ones skipped
    q.last = number;
    q.ring[(q.head + q.count++) % q.ring.size()] = Arrival{number, handle, now};
}

void PathMerge::set_up(std::size_t path, bool up) { up_[path] = up; }

bool PathMerge::past(const Flow& f, std::size_t p, std::uint64_t number) const noexcept {
    if (!up_[p]) return f.queues[p].count == 0 || f.queues[p].front()->number > number;
    const Queue& q = f.queues[p];
    // Its queue's head, or else the last it brought, is the furthest it got.
    if (const Arrival* a = q.front()) return a->number > number;
    return q.last && *q.last >= number;
}

std::optional<PathMerge::Out> PathMerge::next(std::uint8_t flow, Clock::time_point now) {
    Flow& f = flows_[flow];
    // Copies of frames handed out already go back first, whatever the order.
    const Arrival* first = nullptr;
    std::size_t first_path = 0;
    for (std::size_t p = 0; p < paths_; ++p) {
        Queue& q = f.queues[p];
        const Arrival* a = q.front();
        if (a == nullptr) continue;
        if (a->number < f.next) {
            const Out out{Out::kDuplicate, p, a->number, a->handle, 0};
            ++counters_[p].duplicates;
            q.pop();
            return out;
        }
        // Of the heads, the lowest number; of equal numbers, the earlier arrival.
        if (first == nullptr || a->number < first->number || (a->number == first->number && a->at < first->at)) {
            first = a;
            first_path = p;
        }
    }
    if (first == nullptr) return std::nullopt;
    if (first->number == f.next) {
        const Out out{Out::kFrame, first_path, first->number, first->handle, 0};
        ++counters_[first_path].first;
        f.next = first->number + 1;
        f.queues[first_path].pop();
        return out;
    }
    // first->number > next: is any path up that may still bring `next`?
    bool waiting = false;
    for (std::size_t p = 0; p < paths_; ++p) {
        if (!past(f, p, f.next)) waiting = true;
    }
    if (waiting && (policy_ == Policy::kLossless || now < *deadline(flow))) return std::nullopt;
    // No path can bring it: frames a live sender dropped (on every path),
    // as one path's numbers skip them today.
    const Out out{Out::kGap, first_path, f.next, 0, first->number};
    f.next = first->number;
    return out;
}

std::optional<PathMerge::Clock::time_point> PathMerge::deadline(std::uint8_t flow) const {
    if (policy_ != Policy::kLive) return std::nullopt;
    // `next` has been missing since the first arrival past it came.
    const Flow& f = flows_[flow];
    std::optional<Clock::time_point> since;
    for (std::size_t p = 0; p < paths_; ++p) {
        const Arrival* a = f.queues[p].front();
        if (a != nullptr && a->number > f.next && (!since || a->at < *since)) since = a->at;
    }
    if (!since) return std::nullopt;
    return *since + skew_;
}

} // namespace rdmastream
