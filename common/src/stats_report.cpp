// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

namespace rdmastream::cli {

StatsReport::StatsReport(std::string program, bool per_second, std::string latency_is, bool ticks)
    : program_(std::move(program)), latency_is_(std::move(latency_is)), per_second_(per_second),
      ticks_(per_second || ticks), next_(std::chrono::steady_clock::now() + std::chrono::seconds(1)), last_time_(std::chrono::steady_clock::now()) {}

bool StatsReport::tick(const StreamStats& s, const FrameCounters& c) {
    if (!ticks_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return false;
    if (!per_second_) {
        next_ = now + std::chrono::seconds(1);
        return true;
    }
    const double dt = std::chrono::duration<double>(now - last_time_).count();
    const std::uint64_t frames = c.rate_frames(s.frames);
    const double fps = static_cast<double>(frames - last_frames_) / dt;
    last_frames_ = frames;
    last_time_ = now;
    next_ = now + std::chrono::seconds(1);
    std::string progress = c.progress >= 0 ? fmt::format(", {:.0f}% of input", c.progress * 100) : std::string{};
    // The last second's mean latency (the sender's post to delivery; the
    // receiver's one way by the two clocks), not the run's: it shows change.
    std::string latency;
    if (const auto n = s.latency_samples - last_latency_samples_; n > 0) {
        latency = fmt::format(", latency {:.1f} ms",
                              static_cast<double>((s.latency_sum - last_latency_sum_).count()) / 1e6 /
                                  static_cast<double>(n));
    }
    last_latency_samples_ = s.latency_samples;
    last_latency_sum_ = s.latency_sum;
    std::string of = c.target_fps > 0 ? fmt::format(" of {:g}", c.target_fps) : std::string{};
    if (c.programme()) of += fmt::format(" ({})", c.flows[0].kind);
    std::string paths;
    if (paths_) { // two paths: "; A up 640 first, B down 560 first" (once a second)
        for (const PathReport& p : paths_()) {
            paths += fmt::format("{}{} {} {} first", paths.empty() ? "; " : ", ", p.name, p.up ? "up" : "down",
                                 p.frames_first);
        }
    }
    std::fprintf(stderr,
                 "%s: %llu frames, %.1f frames/s%s, %.3f Gb/s%s, %llu copied, %llu dropped, %llu credit waits%s%s\n",
                 program_.c_str(), static_cast<unsigned long long>(s.frames), fps, of.c_str(), s.gbps(),
                 latency.c_str(),
                 static_cast<unsigned long long>(c.copied),
                 static_cast<unsigned long long>(s.drops + c.gaps), static_cast<unsigned long long>(s.credit_waits),
                 progress.c_str(), paths.c_str());
    return true;
}

namespace {
// A path's summary line after `who` ("rdmarecv", "rdmasend: receiver ADDR").
void print_path(const std::string& who, const PathReport& p) {
    std::fprintf(stderr,
                 "%s: path %c (%s): %s; %llu frames first, %llu only on it, %llu lost on it, %llu copies that "
                 "differed; lost %llu times, joined %llu times\n",
                 who.c_str(), p.name, p.peer.c_str(), p.up ? "up" : "down",
                 static_cast<unsigned long long>(p.frames_first), static_cast<unsigned long long>(p.frames_only),
                 static_cast<unsigned long long>(p.frames_lost), static_cast<unsigned long long>(p.copies_differ),
                 static_cast<unsigned long long>(p.downs), static_cast<unsigned long long>(p.ups));
}

nlohmann::json paths_json(const std::vector<PathReport>& paths) {
    nlohmann::json list = nlohmann::json::array();
    for (const PathReport& p : paths) {
        list.push_back({{"path", std::string(1, p.name)},
                        {"peer", p.peer},
                        {"up", p.up},
                        {"frames_first", p.frames_first},
                        {"frames_only", p.frames_only},
                        {"frames_lost", p.frames_lost},
                        {"copies_differ", p.copies_differ},
                        {"downs", p.downs},
                        {"ups", p.ups}});
    }
    return list;
}
} // namespace

void StatsReport::finish(const StreamStats& s, const FrameCounters& c, const std::string& json_path,
                         std::span<const PeerReport> peers) const {
    std::fprintf(stderr,
                 "%s: done: %llu frames, %llu bytes in %.2f s (%.1f frames/s, %.3f Gb/s); %llu zero-copy, %llu "
                 "copied, %llu converted; %llu dropped, %llu credit waits, %llu format changes%s%s\n",
                 program_.c_str(), static_cast<unsigned long long>(s.frames), static_cast<unsigned long long>(s.bytes),
                 s.seconds(), s.fps(), s.gbps(), static_cast<unsigned long long>(c.zero_copy),
                 static_cast<unsigned long long>(c.copied), static_cast<unsigned long long>(c.converted),
                 static_cast<unsigned long long>(s.drops + c.gaps), static_cast<unsigned long long>(s.credit_waits),
                 static_cast<unsigned long long>(c.format_changes), *c.path ? "; path: " : "", c.path);
    if (c.programme()) {
        std::string line;
        for (std::size_t i = 0; i < c.flows.size(); ++i) {
            const FlowCounters& f = c.flows[i];
            if (f.kind == nullptr) continue;
            line += fmt::format("{}flow {} {}: {} frames, {} copied", line.empty() ? "" : "; ", i, f.kind, f.frames,
                                f.copied);
        }
        std::fprintf(stderr, "%s: %s\n", program_.c_str(), line.c_str());
    }
    if (s.latency_samples > 0) {
        std::fprintf(stderr, "%s: latency %.2f ms mean, %.2f ms max over %llu frames (%s)\n", program_.c_str(),
                     s.latency_mean_us() / 1e3, s.latency_max_us() / 1e3,
                     static_cast<unsigned long long>(s.latency_samples),
                     latency_is_.c_str());
    }
    for (const PeerReport& p : peers) {
        std::fprintf(stderr,
                     "%s: receiver %s: %llu frames, %llu bytes, %llu dropped, %llu credit waits, latency %.2f ms "
                     "mean; %s policy%s\n",
                     program_.c_str(), p.peer.c_str(), static_cast<unsigned long long>(p.stats.frames),
                     static_cast<unsigned long long>(p.stats.bytes), static_cast<unsigned long long>(p.stats.drops),
                     static_cast<unsigned long long>(p.stats.credit_waits), p.stats.latency_mean_us() / 1e3,
                     p.policy.c_str(),
                     // A receiver gone before its first frame (refused its format, cut, failed) never
                     // streamed: not one that left mid-stream. The log line says which.
                     !p.left ? "" : p.stats.frames == 0 ? "; gone before its first frame" : "; gone mid-stream");
        for (const PathReport& path : p.paths) print_path(program_ + ": receiver " + p.peer, path);
    }
    const std::vector<PathReport> paths = paths_ ? paths_() : std::vector<PathReport>{};
    for (const PathReport& p : paths) print_path(program_, p);
    if (json_path.empty()) return;
    nlohmann::json j = {
        {"program", program_},
        {"frames", s.frames},
        {"bytes", s.bytes},
        {"seconds", s.seconds()},
        {"fps", s.fps()},
        {"target_fps", c.target_fps},
        {"gbps", s.gbps()},
        {"zero_copy_frames", c.zero_copy},
        {"copies", c.copied},
        {"converted", c.converted},
        {"drops", s.drops},
        {"gaps", c.gaps},
        {"credit_waits", s.credit_waits},
        {"format_changes", c.format_changes},
        {"latency_mean_us", s.latency_mean_us()},
        {"latency_max_us", s.latency_max_us()},
        {"path", c.path},
        // The longest time between two frames' arrivals (a receiver's stall).
        {"max_frame_gap_ms", static_cast<double>(s.max_gap.count()) / 1e6},
    };
    if (!paths.empty()) j["paths"] = paths_json(paths);
    if (c.stream_seconds > 0) {
        // The rate while frames flowed, without the wait for the first one
        // or the outputs' drain after the last (which `fps` includes).
        j["stream_seconds"] = c.stream_seconds;
        const std::uint64_t frames = c.rate_frames(s.frames);
        j["stream_fps"] = frames > 1 ? static_cast<double>(frames - 1) / c.stream_seconds : 0.0;
    }
    if (c.programme()) { // a stream of one flow: the numbers above are its
        nlohmann::json& flows = j["flows"] = nlohmann::json::array();
        for (std::size_t i = 0; i < c.flows.size(); ++i) {
            const FlowCounters& f = c.flows[i];
            if (f.kind == nullptr) continue;
            flows.push_back({{"flow", i}, {"kind", f.kind}, {"frames", f.frames}, {"copies", f.copied}});
        }
    }
    if (!peers.empty()) {
        nlohmann::json& list = j["receivers"] = nlohmann::json::array();
        for (const PeerReport& p : peers) {
            list.push_back({{"peer", p.peer},
                            {"policy", p.policy},
                            {"left", p.left},
                            {"frames", p.stats.frames},
                            {"bytes", p.stats.bytes},
                            {"drops", p.stats.drops},
                            {"credit_waits", p.stats.credit_waits},
                            {"latency_mean_us", p.stats.latency_mean_us()},
                            {"latency_max_us", p.stats.latency_max_us()}});
            if (!p.paths.empty()) list.back()["paths"] = paths_json(p.paths);
        }
    }
    if (json_path == "-") {
        std::cout << j.dump(2) << std::endl;
        return;
    }
    std::ofstream out(json_path);
    out << j.dump(2) << '\n';
    if (!out) {
        throw UserError(fmt::format("cannot write --stats-json {}: check the folder exists and is writable",
                                    json_path));
    }
}

} // namespace rdmastream::cli
