// SPDX-License-Identifier: LGPL-2.1-or-later
// When to send the next frame: as fast as possible, at the stream's own
// rate (--realtime, from the timestamps), or at a fixed rate (--fps).
// While it waits it keeps the connection serviced (keepalives, credits).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace rdmastream::cli {

class Pacer {
public:
    enum class Mode { kAsFastAsPossible, kRealtime, kFixedRate };
    Pacer(Mode mode, double fps);
    // Sleeps until frame `index` (timestamp `pts_ns`, kNoTime: none) is
    // due, calling `service` at least every 100 ms meanwhile.
    void wait(std::uint64_t index, std::int64_t pts_ns, const std::function<void()>& service);

private:
    Mode mode_;
    double fps_;
    bool started_ = false;
    std::chrono::steady_clock::time_point start_;
    std::int64_t first_pts_ = 0;
};

} // namespace rdmastream::cli
