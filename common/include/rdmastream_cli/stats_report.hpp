// SPDX-License-Identifier: LGPL-2.1-or-later
// Stats both programs print: a line a second on stderr while streaming, a
// summary at the end, and the same numbers as JSON for --stats-json.
#pragma once

#include "rdmastream/format.hpp"
#include "rdmastream/stream_stats.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace rdmastream::cli {

// One flow's share of a programme's counters (its video, its audio).
struct FlowCounters {
    const char* kind = nullptr; // "video", "audio" (a literal); null: no such flow
    std::uint64_t frames = 0;   // sent (offered or dropped) / received
    std::uint64_t copied = 0;   // of them, frames the CPU wrote: one copy (or one conversion)
};

// What the programs add to the transport's counters.
struct FrameCounters {
    std::uint64_t zero_copy = 0; // frames the NIC read (or the output took) in place
    std::uint64_t copied = 0;    // frames that needed one CPU copy (fallback path)
    std::uint64_t converted = 0; // frames converted by libswscale (--pix-fmt); a conversion writes once
    std::uint64_t gaps = 0;      // receiver: frames the sender dropped (sequence gaps)
    std::uint64_t format_changes = 0;
    double progress = -1;        // 0..1 of the input, < 0 unknown (live source)
    double target_fps = 0;       // the rate the source runs at, if known: lines say "N frames/s of T"
    double stream_seconds = 0;   // receiver: from the first frame's arrival to the last's (the JSON's stream_fps)
    const char* path = "";       // which buffer path ran (a literal), e.g. "decoder -> registered pool (zero-copy)"
    // Per flow. With more than one, the rates shown are the first flow's
    // (the pictures'), whose frames the source's rate counts.
    std::array<FlowCounters, kMaxFlows> flows{};
    bool programme() const noexcept {
        int n = 0;
        for (const FlowCounters& f : flows) n += f.kind != nullptr;
        return n > 1; // flow ids need not be dense: a sender numbers its own
    }
    // The frames the rate counts: the first flow's in a programme, else all.
    std::uint64_t rate_frames(std::uint64_t all) const noexcept { return programme() ? flows[0].frames : all; }
};

// One receiver of a fan-out (rdmasend --receivers), for the summary.
struct PeerReport {
    std::string peer;
    StreamStats stats;
    std::string policy; // "lossless" or "live": what is in force for it
    bool left = false;  // it left or failed mid-stream: its numbers up to then
    std::vector<PathReport> paths; // a receiver over two paths: each one's
};

class StatsReport {
public:
    // `program` prefixes every line; per_second: print the running line;
    // `latency_is` says what the latency figures measure, for the summary;
    // `ticks`: tick() reports the seconds even without the line (--metrics
    // publishes on them).
    StatsReport(std::string program, bool per_second, std::string latency_is, bool ticks = false);
    // Called per frame: one clock read (none with neither the line nor
    // `ticks`); prints once a second. True once a second: the stats tick.
    bool tick(const StreamStats& s, const FrameCounters& c);
    // The summary line on stderr; JSON to `json_path` ("-": stdout) if set.
    // `peers`: a line each, and a "receivers" array in the JSON.
    void finish(const StreamStats& s, const FrameCounters& c, const std::string& json_path,
                std::span<const PeerReport> peers = {}) const;
    // Two paths: where each path's counters come from (asked once a second
    // and at the end): the running line says each path's state and first
    // copies, the summary a line each, the JSON a "paths" array.
    void set_paths(std::function<std::vector<PathReport>()> paths) { paths_ = std::move(paths); }

private:
    std::string program_;
    std::string latency_is_;
    bool per_second_;
    bool ticks_;
    std::chrono::steady_clock::time_point next_;
    std::uint64_t last_frames_ = 0;
    std::uint64_t last_latency_samples_ = 0; // for the last second's mean latency
    std::chrono::nanoseconds last_latency_sum_{0};
    std::chrono::steady_clock::time_point last_time_;
    std::function<std::vector<PathReport>()> paths_;
};

} // namespace rdmastream::cli
