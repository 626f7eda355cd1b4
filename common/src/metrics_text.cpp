// SPDX-License-Identifier: LGPL-2.1-or-later
// The two text formats differ only where this file says: OpenMetrics names
// a counter's family without its _total suffix and an info family without
// _info, has an "info" type (Prometheus text: a gauge), and ends with # EOF.
// Metric names follow Prometheus' conventions: the rdmastream_ prefix, base
// units (seconds, bytes), _total on counters.
#include "rdmastream_cli/metrics_text.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

namespace rdmastream::cli {
namespace {

enum class Type { kCounter, kGauge, kHistogram, kInfo };

constexpr const char* type_name(Type t, MetricsFormat f) {
    switch (t) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
    case Type::kInfo: return f == MetricsFormat::kOpenMetrics ? "info" : "gauge";
    }
    return "unknown";
}

// A label value between quotes: backslash, quote and newline escaped (both formats).
std::string escaped(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (const char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

// A histogram bound in seconds, as Prometheus' clients write them.
std::string seconds(std::int64_t ns) { return fmt::format("{}", static_cast<double>(ns) / 1e9); }

class Writer {
public:
    explicit Writer(MetricsFormat f) : f_(f) {}

    // HELP and TYPE of the family `name` (a sample's name: with _total or _info).
    void family(std::string_view name, Type t, std::string_view help) {
        std::string_view base = name;
        if (f_ == MetricsFormat::kOpenMetrics) {
            if (t == Type::kCounter && base.ends_with("_total")) base.remove_suffix(6);
            if (t == Type::kInfo && base.ends_with("_info")) base.remove_suffix(5);
        }
        fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", base, help, base, type_name(t, f_));
    }
    // `labels`: `name="value",...` already escaped, or empty.
    void sample(std::string_view name, std::string_view labels, std::uint64_t value) {
        fmt::format_to(std::back_inserter(out_), "{}{}{}{} {}\n", name, labels.empty() ? "" : "{", labels,
                       labels.empty() ? "" : "}", value);
    }
    void sample(std::string_view name, std::string_view labels, double value) {
        fmt::format_to(std::back_inserter(out_), "{}{}{}{} {}\n", name, labels.empty() ? "" : "{", labels,
                       labels.empty() ? "" : "}", value);
    }
    // The _bucket (cumulative, le="+Inf" last), _count and _sum samples.
    void histogram(std::string_view name, std::string_view labels, const StreamStats& s) {
        const std::string sep = labels.empty() ? "" : ",";
        std::uint64_t below = 0;
        const auto& counts = s.latency_buckets.counts;
        for (std::size_t i = 0; i < LatencyHistogram::kUpperNs.size(); ++i) {
            below += counts[i];
            sample(fmt::format("{}_bucket", name),
                   fmt::format("{}{}le=\"{}\"", labels, sep, seconds(LatencyHistogram::kUpperNs[i])), below);
        }
        below += counts.back();
        sample(fmt::format("{}_bucket", name), fmt::format("{}{}le=\"+Inf\"", labels, sep), below);
        sample(fmt::format("{}_count", name), labels, below); // = the samples: each went in one bucket
        sample(fmt::format("{}_sum", name), labels, static_cast<double>(s.latency_sum.count()) / 1e9);
    }

    std::string finish() {
        if (f_ == MetricsFormat::kOpenMetrics) out_ += "# EOF\n";
        return std::move(out_);
    }

private:
    MetricsFormat f_;
    std::string out_;
};

// A fan-out's receivers by address. One that left and dialled in again from
// the same address and port (rare: rdma_cm picks a new port) would repeat a
// series, which the formats forbid: its counts add up under one label.
struct PeerSeries {
    StreamStats stats;
    std::string policy;
    bool connected = false;
};

std::map<std::string, PeerSeries> by_peer(const std::vector<PeerReport>& receivers) {
    std::map<std::string, PeerSeries> out;
    for (const PeerReport& r : receivers) {
        PeerSeries& p = out[r.peer];
        p.stats.frames += r.stats.frames;
        p.stats.bytes += r.stats.bytes;
        p.stats.drops += r.stats.drops;
        p.stats.credit_waits += r.stats.credit_waits;
        p.stats.latency_sum += r.stats.latency_sum;
        p.stats.latency_buckets += r.stats.latency_buckets;
        p.connected = p.connected || !r.left;
        p.policy = r.policy;
    }
    return out;
}

void write_receivers(Writer& w, const std::vector<PeerReport>& receivers) {
    const auto peers = by_peer(receivers);
    if (peers.empty()) return; // a family without samples says nothing
    std::map<std::string, std::string> labels;
    for (const auto& [peer, p] : peers) labels[peer] = fmt::format("peer=\"{}\"", escaped(peer));

    w.family("rdmastream_receiver_connected", Type::kGauge,
             "Whether this receiver of the fan-out is connected now (1) or left or was cut (0); its counters stay");
    for (const auto& [peer, p] : peers) {
        w.sample("rdmastream_receiver_connected", fmt::format("{},policy=\"{}\"", labels[peer], escaped(p.policy)),
                 std::uint64_t{p.connected ? 1u : 0u});
    }
    struct Counter {
        const char* name;
        const char* help;
        std::uint64_t StreamStats::*field;
    };
    static constexpr Counter kCounters[] = {
        {"rdmastream_receiver_frames_total", "Frames delivered to this receiver", &StreamStats::frames},
        {"rdmastream_receiver_bytes_total", "Payload bytes delivered to this receiver", &StreamStats::bytes},
        {"rdmastream_receiver_drops_total", "Frames this receiver missed: dropped for it by the live policy",
         &StreamStats::drops},
        {"rdmastream_receiver_credit_waits_total", "Frames that waited for a free slot of this receiver",
         &StreamStats::credit_waits},
    };
    for (const Counter& c : kCounters) {
        w.family(c.name, Type::kCounter, c.help);
        for (const auto& [peer, p] : peers) w.sample(c.name, labels[peer], p.stats.*c.field);
    }
    w.family("rdmastream_receiver_latency_seconds", Type::kHistogram,
             "Seconds from posting a frame to this receiver to learning it was delivered");
    for (const auto& [peer, p] : peers) w.histogram("rdmastream_receiver_latency_seconds", labels[peer], p.stats);
}

// Two paths: each path's own view before the merge, in the manner of SMPTE
// ST 2022-7's statistics, labelled by its letter and RDMA device (a path
// not connected yet has none: device=""), and in a fan-out by its
// receiver (peer=, as the receiver series; one that came back counts as
// it is now). One path writes none of these.
struct LabelledPath {
    std::string labels;
    const PathReport* path;
};

std::vector<LabelledPath> labelled_paths(const std::vector<PathReport>& paths, const std::vector<PeerReport>& receivers) {
    const auto path_labels = [](const PathReport& p) {
        return fmt::format("path=\"{}\",device=\"{}\"", p.name, escaped(p.device));
    };
    std::vector<LabelledPath> out;
    for (const PathReport& p : paths) out.push_back({path_labels(p), &p});
    std::map<std::string, const PeerReport*> latest; // by peer: its last report
    for (const PeerReport& r : receivers) {
        if (!r.paths.empty()) latest[r.peer] = &r;
    }
    for (const auto& [peer, r] : latest) {
        for (const PathReport& p : r->paths) {
            out.push_back({fmt::format("peer=\"{}\",{}", escaped(peer), path_labels(p)), &p});
        }
    }
    return out;
}

void write_paths(Writer& w, const std::vector<LabelledPath>& paths, bool sender) {
    if (paths.empty()) return;
    w.family("rdmastream_path_up", Type::kGauge, "Whether this path is up now (1) or lost (0); its counters stay");
    for (const LabelledPath& p : paths) w.sample("rdmastream_path_up", p.labels, std::uint64_t{p.path->up});
    const struct {
        const char* name;
        const char* help;
        std::uint64_t PathReport::*field;
    } counters[] = {
        {"rdmastream_path_frames_first_total",
         sender ? "Frames this path delivered" : "Frames handed out from this path's copy (it came first)",
         &PathReport::frames_first},
        {"rdmastream_path_frames_only_total",
         sender ? "Frames only this path posted" : "Frames handed out from this path that no copy of came on the other",
         &PathReport::frames_only},
        {"rdmastream_path_frames_lost_total",
         sender ? "Frames this path never delivered (skipped because the other path had, or lost with it)"
                : "Frames missing from this path's sequence (the other path brought them, or both lost them)",
         &PathReport::frames_lost},
        {"rdmastream_path_copies_differ_total",
         "Second copies unlike the first: a fault on a path, logged once each (always 0 on a sender)",
         &PathReport::copies_differ},
        {"rdmastream_path_downs_total", "Times this path was lost", &PathReport::downs},
        {"rdmastream_path_ups_total",
         "Times this path joined after the stream opened (a path B that came late, or one that came back)",
         &PathReport::ups},
    };
    for (const auto& k : counters) {
        w.family(k.name, Type::kCounter, k.help);
        for (const LabelledPath& p : paths) w.sample(k.name, p.labels, p.path->*k.field);
    }
}

} // namespace

MetricsFormat metrics_format_for(std::string_view accept) {
    return accept.find("application/openmetrics-text") != std::string_view::npos ? MetricsFormat::kOpenMetrics
                                                                                 : MetricsFormat::kPrometheus;
}

const char* metrics_content_type(MetricsFormat f) {
    return f == MetricsFormat::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                            : "text/plain; version=0.0.4; charset=utf-8";
}

std::string render_metrics(const MetricsSnapshot& s, const MetricsIdentity& who, MetricsFormat f) {
    Writer w(f);
    const bool sender = who.program == "rdmasend";
    w.family("rdmastream_build_info", Type::kInfo, "The program and version serving these metrics");
    w.sample("rdmastream_build_info",
             fmt::format("program=\"{}\",version=\"{}\"", escaped(who.program), RDMASTREAM_VERSION), std::uint64_t{1});
    w.family("rdmastream_peers_connected", Type::kGauge,
             sender ? "Receivers connected now (0 or 1; a fan-out: how many)" : "Senders streaming to this receiver now (0 or 1)");

    w.sample("rdmastream_peers_connected", "", std::uint64_t{s.peers_connected});
    const StreamStats& t = s.stats;
    const FrameCounters& c = s.counters;
    const struct {
        const char* name;
        const char* help;
        std::uint64_t value;
    } counters[] = {
        {"rdmastream_frames_total",
         sender ? "Frames sent (a fan-out: frames offered to its receivers)" : "Frames received", t.frames},
        {"rdmastream_bytes_total", sender ? "Payload bytes sent" : "Payload bytes received", t.bytes},
        {"rdmastream_drops_total",
         sender ? "Frames dropped under the live policy instead of waiting for a free slot (a fan-out: frames no "
                  "receiver got)"
                : "Frames this receiver dropped",
         t.drops},
        {"rdmastream_gaps_total",
         "Frames missing from the sequence that arrived: a live sender dropped them (always 0 on a sender)", c.gaps},
        {"rdmastream_copies_total",
         sender ? "Frames that needed one CPU copy into registered memory" : "Frames an output copied out of the ring",
         c.copied},
        {"rdmastream_zero_copy_frames_total",
         sender ? "Frames the NIC read in place, where the decoder wrote them" : "Frames the outputs took in place",
         c.zero_copy},
        {"rdmastream_conversions_total", "Frames converted by libswscale (rdmasend --pix-fmt)", c.converted},
        {"rdmastream_credit_waits_total", "Frames that had to wait for a free slot of the receiver's ring",
         t.credit_waits},
        {"rdmastream_format_changes_total", "Stream format changes after the first format", c.format_changes},
    };
    for (const auto& k : counters) {
        w.family(k.name, Type::kCounter, k.help);
        w.sample(k.name, "", k.value);
    }
    // Per flow (a programme's video, audio): its frames and copies, labelled
    // with the flow's number and kind. A one-flow stream has its one series.
    const struct {
        const char* name;
        const char* help;
        std::uint64_t FlowCounters::*value;
    } per_flow[] = {
        {"rdmastream_flow_frames_total", sender ? "Frames of this flow sent (offered or dropped)" : "Frames of this flow received",
         &FlowCounters::frames},
        {"rdmastream_flow_copies_total",
         sender ? "Frames of this flow the CPU wrote into registered memory (a copy or a conversion)"
                : "Frames of this flow an output copied out of the ring",
         &FlowCounters::copied},
    };
    for (const auto& k : per_flow) {
        w.family(k.name, Type::kCounter, k.help);
        for (std::size_t i = 0; i < c.flows.size(); ++i) {
            const FlowCounters& flow = c.flows[i];
            if (flow.kind == nullptr) continue;
            w.sample(k.name, fmt::format("flow=\"{}\",kind=\"{}\"", i, flow.kind), flow.*k.value);
        }
    }
    w.family("rdmastream_latency_seconds", Type::kHistogram,
             fmt::format("Frame latency in seconds: {}", who.latency_is));
    w.histogram("rdmastream_latency_seconds", "", t);
    if (s.fanout) write_receivers(w, s.receivers);
    write_paths(w, labelled_paths(s.paths, s.fanout ? s.receivers : std::vector<PeerReport>{}), sender);
    return w.finish();
}

} // namespace rdmastream::cli
