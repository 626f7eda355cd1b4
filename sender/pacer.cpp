// SPDX-License-Identifier: LGPL-2.1-or-later
#include "pacer.hpp"

#include "rdmastream/no_time.hpp"

#include <algorithm>
#include <thread>

namespace rdmastream::cli {

Pacer::Pacer(Mode mode, double fps) : mode_(mode), fps_(fps) {}

void Pacer::wait(std::uint64_t index, std::int64_t pts_ns, const std::function<void()>& service) {
    using namespace std::chrono;
    if (mode_ == Mode::kAsFastAsPossible) return;
    const auto now = steady_clock::now();
    if (!started_ || (mode_ == Mode::kRealtime && pts_ns != kNoTime &&
                      pts_ns < first_pts_)) { // first frame, or the timestamps went back: restart the clock
        started_ = true;
        start_ = now;
        first_pts_ = pts_ns == kNoTime ? 0 : pts_ns;
        if (mode_ == Mode::kRealtime) return;
    }
    steady_clock::time_point due;
    if (mode_ == Mode::kFixedRate) {
        due = start_ + duration_cast<steady_clock::duration>(duration<double>(static_cast<double>(index) / fps_));
    } else {
        if (pts_ns == kNoTime) return; // no timestamp: send now
        due = start_ + nanoseconds(pts_ns - first_pts_);
    }
    for (auto t = steady_clock::now(); t < due; t = steady_clock::now()) {
        std::this_thread::sleep_until(std::min(due, t + milliseconds(100)));
        service();
    }
}

} // namespace rdmastream::cli
