// SPDX-License-Identifier: LGPL-2.1-or-later
// What every flow of rdmasend's stream shares: the sender, the idle
// timeout its waits take, the counters the stats show, and the stream's
// one clock anchor.
#pragma once

#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/no_time.hpp"
#include "rdmastream/sender.hpp"

#include <chrono>
#include <cstdint>

namespace rdmastream::cli {

struct SendContext {
    Sender& tx;
    std::chrono::milliseconds idle;
    bool fanout = false; // --receivers: a stuck receiver's wait is named as such
    FrameCounters& counters;
    bool clock_told = false; // the receiver(s) know where pts 0 is

    // Where pts 0 is, once, as the stream's first frame goes (whichever
    // flow's): that frame is presented now (paced: at its due time).
    void tell_clock(std::int64_t pts) {
        if (clock_told || pts == kNoTime) return;
        tx.set_clock(anchor_now(pts), idle);
        clock_told = true;
    }
};

} // namespace rdmastream::cli
