// SPDX-License-Identifier: LGPL-2.1-or-later
#include "receive_session.hpp"

#include "rdmastream_cli/clock_text.hpp"
#include "rdmastream_cli/metrics_exporter.hpp"
#include "rdmastream_cli/rdma_device.hpp"
#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/receiver.hpp"

#include <fmt/format.h>
#include <gst/gst.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace rdmastream::cli {
namespace {

constexpr const char* kLatencyIs = "one way, from the sender's clock to ours";

volatile std::sig_atomic_t g_stop = 0; // Ctrl-C: stop, close the outputs properly
Waker* g_waker = nullptr;                // and wake the receive loop's wait
extern "C" void on_interrupt(int) {
    g_stop = 1;
    if (g_waker != nullptr) g_waker->wake(); // async-signal-safe
}

void log_line(const std::string& line) { std::fprintf(stderr, "rdmarecv: %s\n", line.c_str()); }

ReceiverConfig receiver_config(const ReceiveOptions& o, std::shared_ptr<Waker> waker) {
    ReceiverConfig c;
    c.slots = o.connection.slots;
    c.slot_size = o.slot_size;
    c.device = o.connection.device();
    c.device_b = o.connection.device_b();
    c.poll_mode = poll_mode(o.connection);
    c.max_frame_bytes = o.max_frame_bytes;
    c.max_ring_bytes = o.max_ring_bytes;
    c.max_flows = o.max_flows;
    c.flow_slots = o.flow_slots;
    c.memory_windows = o.memory_windows;
    c.live = o.connection.policy == "live"; // the sender drops frames rather than wait for us
    c.path_skew = std::chrono::milliseconds(static_cast<long long>(o.path_skew_ms));
    c.waker = std::move(waker);
    c.key = load_key(o.connection, "rdmarecv");
    c.log = log_line; // each path's loss and return
    c.open_timeout = to_ms(o.connection.connect_timeout);
    c.handshake_timeout = to_ms(o.connection.handshake_timeout);
    // A listener's new sender is on probation until its first frame, which
    // must carry a format rdmarecv can read (read_stream_layout) and a
    // payload that fits it (planes, or whole sample frames): the checks the receive loop makes
    // (it makes them again: once per stream), here where a refusal is the
    // peer's and the listener goes on.
    c.check_first_frame = [](const ReceivedFrame& f, const std::string& peer) {
        read_stream_layout(*f.format, peer).check_frame(f.header.sequence, f.payload.size());
    };
    return c;
}

// Where the sender is met: dialled, or listened for (refusals logged as
// rdmarecv's lines); two Doors for two paths.
std::vector<Door> open_doors(const ReceiveOptions& o, const ConnectionPlan& plan) {
    std::vector<Door> doors;
    if (!plan.listen) {
        doors.push_back(Door::dial(plan.endpoint));
        if (plan.endpoint_b) doors.push_back(Door::dial(*plan.endpoint_b));
        return doors;
    }
    const AllowList allow = allow_list(o.connection, plan);
    doors.push_back(Door::listen(plan.endpoint, allow, log_line, plan.pending));
    if (plan.endpoint_b) doors.push_back(Door::listen(*plan.endpoint_b, allow, log_line, plan.pending));
    std::fprintf(stderr, "rdmarecv: listening on %s%s%s, %u slots of %u bytes%s%s\n", doors[0].describe().c_str(),
                 doors.size() > 1 ? " (path A) and " : "", doors.size() > 1 ? (doors[1].describe() + " (path B)").c_str() : "",
                 o.connection.slots, o.slot_size, allow.empty() ? "" : "; allowed: ",
                 allow.empty() ? "" : allow.describe().c_str());
    return doors;
}

// Who still holds each slot: the sinks that kept its frame. A slot's credit
// goes back when the count reaches zero. Receive loop's thread only.
class SlotHolds {
public:
    SlotHolds(Receiver& rx, SlotReleaseQueue& released)
        : rx_(rx), released_(released), holders_(released.capacity(), 0) {}

    // Gives the frame to the sinks that take its flow; releases the slot
    // unless one kept it. The count starts at sinks + 1 so that a sink
    // handing the slot back before consume returns cannot release it early.
    void consume(const ReceivedFrame& f, const std::vector<FrameSink*>& sinks) {
        holders_[f.slot] = static_cast<std::uint32_t>(sinks.size()) + 1;
        for (FrameSink* s : sinks) {
            if (s->consume(f)) --holders_[f.slot];
        }
        ++held_;
        let_go(f.slot); // consume's own hold
    }
    // Returns the credits of slots the sinks handed back since the last call.
    void drain(const std::vector<std::unique_ptr<FrameSink>>& sinks) {
        for (const auto& s : sinks) s->collect_freed(); // into released_: one queue to drain
        released_.drain([this](std::uint16_t slot) { let_go(slot); });
    }

private:
    // One holder let go of `slot`: its credit goes back with the last one.
    void let_go(std::uint16_t slot) {
        if (holders_[slot] == 0) {
            throw std::logic_error(fmt::format("an output handed back slot {} it did not hold", slot));
        }
        if (--holders_[slot] == 0) {
            --held_;
            rx_.release(slot);
        }
    }

    Receiver& rx_;
    SlotReleaseQueue& released_;
    std::vector<std::uint32_t> holders_;
    std::uint32_t held_ = 0; // slots with a non-zero count
};

// The next frame; nullopt at end of stream or on Ctrl-C. One wait, woken by
// whatever needs the loop: a slot an output handed back (its credit goes
// out at once), a pipeline message, Ctrl-C. The idle timeout counts from
// the sender's last frame or keepalive, so a held slot never hides a stuck
// sender and a slow output never looks like one.
std::optional<ReceivedFrame> next_frame(Receiver& rx, SlotHolds& holds, std::chrono::milliseconds idle,
                                       const std::vector<std::unique_ptr<FrameSink>>& sinks) {
    for (;;) {
        holds.drain(sinks);
        if (g_stop) return std::nullopt;
        Receiver::Arrival a = rx.wait_frame(idle);
        if (a.kind == Receiver::Arrival::kFrame) return std::move(a.frame);
        if (a.kind == Receiver::Arrival::kEnd) return std::nullopt;
        for (const auto& s : sinks) s->check(); // woken: an output may have failed
    }
}

// A flow's first format: which outputs take its frames. One that none
// takes is said once; its frames' slots go back as they come.
void start_flow(std::uint8_t flow, const StreamLayout& stream, const std::vector<std::unique_ptr<FrameSink>>& sinks,
                std::vector<FrameSink*>& taking) {
    for (const auto& s : sinks) {
        if (s->takes(stream)) taking.push_back(s.get());
    }
    if (taking.empty()) {
        std::fprintf(stderr, "rdmarecv: flow %u (%s) goes to no output: none takes it (--gst the first flow and each flowN. its pipeline links from; "
                             "-o the first video and the audio its file type holds; a flow announced after the "
                             "first frame goes to no file)\n",
                     flow, stream.layout.format().caps.c_str());
    }
}

// Frames of `flow` the outputs copied so far (each counts its own, where it copies).
std::uint64_t copies_of(const std::vector<std::unique_ptr<FrameSink>>& sinks, std::uint8_t flow) noexcept {
    std::uint64_t n = 0;
    for (const auto& s : sinks) n += s->copies(flow);
    return n;
}

// Every flow's copies, into the counters (their sum the stream's).
void count_copies(const std::vector<std::unique_ptr<FrameSink>>& sinks, FrameCounters& c) noexcept {
    c.copied = 0;
    for (std::uint8_t i = 0; i < kMaxFlows; ++i) {
        if (c.flows[i].kind != nullptr) c.flows[i].copied = copies_of(sinks, i);
        c.copied += c.flows[i].copied;
    }
}

} // namespace

int run_receive(const ReceiveOptions& o, const ConnectionPlan& plan, std::vector<std::unique_ptr<FrameSink>> sinks,
                SlotReleaseQueue& released) {
    // First: a taken port is refused before anything else starts, and the
    // endpoint answers (all zeros) while rdmarecv waits for a sender.
    std::unique_ptr<MetricsExporter> metrics;
    if (o.metrics) {
        metrics = std::make_unique<MetricsExporter>(*o.metrics, MetricsIdentity{"rdmarecv", kLatencyIs});
        std::fprintf(stderr, "rdmarecv: metrics at %s\n", metrics->url().c_str());
    }
    require_rdma_device(o.connection.device());
    require_rdma_device(o.connection.device_b());
    g_waker = released.waker().get();
    const auto old = std::signal(SIGINT, on_interrupt); // also while waiting for a sender worth serving
    // GStreamer reads every stream's caps (FrameLayout, also without --gst):
    // start it before the sender connects. Started at the first frame, its
    // plugin scan (seconds in a fresh guest) kept rdmarecv from its CQ so
    // long that a fast sender's keepalives found no receive posted (RNR).
    if (!gst_is_initialized()) gst_init(nullptr, nullptr);
    std::vector<Door> doors = open_doors(o, plan);
    // Probation, busy refusals and the wait for a sender worth serving
    // (--connect-timeout in all) are the library's; Ctrl-C ends the wait.
    const ReceiverConfig config = receiver_config(o, released.waker());
    std::unique_ptr<Receiver> rx;
    while (!rx && !g_stop) { // nullptr: woken (Ctrl-C, or a stray wake)
        rx = doors.size() > 1 ? Receiver::open(doors[0], doors[1], config) : Receiver::open(doors[0], config);
    }
    if (!rx) { // Ctrl-C before any sender was admitted
        std::signal(SIGINT, old);
        g_waker = nullptr;
        std::fprintf(stderr, "rdmarecv: interrupted before a sender connected\n");
        return 130;
    }
    // Declared after the ring: on any exit the outputs (and buffers still
    // pointing into slots) go first.
    const auto outputs = std::move(sinks);
    SlotHolds holds(*rx, released);
    std::fprintf(stderr, "rdmarecv: sender connected%s, from %s\n", rx->huge_pages() ? " (ring on huge pages)" : "",
                 rx->peer().c_str());
    if (rx->slot_numbers() > released.capacity()) { // sized before the sender came (slot_numbers)
        throw std::logic_error(fmt::format("rdmarecv: the receiver numbers {} slots, its tables {}",
                                           rx->slot_numbers(), released.capacity()));
    }
    StatsReport report("rdmarecv", !o.quiet, kLatencyIs, metrics != nullptr);
    if (plan.endpoint_b) {
        report.set_paths([&rx] { return rx->paths(); });
        if (metrics) metrics->set_paths([&rx] { return rx->paths(); });
    }
    FrameCounters counters;
    counters.path = "ring slot -> outputs in place";
    // The loop counts every frame zero-copy as it arrives and the outputs'
    // copies apart; the numbers shown subtract them, as the summary does.
    const auto publish = [&](bool connected) {
        FrameCounters shown = counters;
        shown.zero_copy -= std::min(shown.zero_copy, shown.copied);
        metrics->publish(rx->stats(), shown, connected);
    };
    if (metrics) publish(true);
    std::uint64_t taken = 0; // the first flow's frames (--frames counts them)
    std::array<std::uint64_t, kMaxFlows> expected_seq{}; // each flow numbers its frames
    const auto idle = to_ms(o.connection.idle_timeout);
    // Each flow's current format, read and checked once; the outputs point
    // into it. Declared after them: they go first.
    std::array<std::optional<StreamLayout>, kMaxFlows> streams;
    std::array<std::vector<FrameSink*>, kMaxFlows> taking; // the outputs each flow's frames go to
    bool programme_known = false;
    std::optional<ClockAnchor> clock; // the sender's, once it says
    bool ended = false;
    std::chrono::steady_clock::time_point first_arrival;
    // A flow's format, read and checked once, to the outputs that take
    // the flow (chosen at its first format).
    const auto take_format = [&](std::uint8_t flow, const StreamFormat& format) {
        StreamLayout next = read_stream_layout(format, rx->peer()); // refused before any output sees it
        std::fprintf(stderr, "rdmarecv: %sformat %u: %s\n", flow > 0 ? fmt::format("flow {} ", flow).c_str() : "",
                     format.id, format.caps.c_str());
        std::optional<StreamLayout>& stream = streams[flow];
        const bool first = !stream;
        stream = std::move(next);
        if (first) {
            start_flow(flow, *stream, outputs, taking[flow]);
            counters.flows[flow].kind = stream->audio ? "audio" : "video";
        }
        for (FrameSink* s : taking[flow]) s->start_format(*stream);
        if (!first) ++counters.format_changes;
        if (flow == 0) { // the rate the stats compare against: the first flow's
            const AVRational rate = stream->caps.framerate;
            counters.target_fps = rate.num > 0 ? av_q2d(rate) : 0; // audio: none, frames vary
        }
    };
    while (!g_stop && (o.frames == 0 || taken < o.frames)) {
        auto f = next_frame(*rx, holds, idle, outputs);
        if (!f) {
            ended = !g_stop;
            break;
        }
        if (f->format == nullptr) {
            throw ProtocolError("the sender sent a frame before announcing its format: rdmarecv needs raw video "
                                "or audio with caps (rdmasend, or rdmasink from GStreamer)");
        }
        if (!programme_known) {
            // The flows announced before the first frame are the programme:
            // every one's format goes to the outputs now, so a file's header
            // lists them all before any frame is written.
            std::uint16_t flows = 0;
            for (std::uint8_t i = 0; i < kMaxFlows; ++i) {
                if (rx->format(i) != nullptr) flows = static_cast<std::uint16_t>(flows | 1u << i);
            }
            for (const auto& s : outputs) s->start_programme(flows);
            for (std::uint8_t i = 0; i < kMaxFlows; ++i) {
                if (const StreamFormat* format = rx->format(i)) take_format(i, *format);
            }
            for (const auto& s : outputs) s->programme_ready();
            programme_known = true;
            first_arrival = std::chrono::steady_clock::now();
        }
        const std::uint8_t flow = f->header.flow;
        std::optional<StreamLayout>& stream = streams[flow];
        // A flow's first frame says its format changed: the one taken above at the programme's start, then.
        if (!stream || (f->format_changed && stream->layout.format().id != f->format->id)) {
            take_format(flow, *f->format);
        }
        if (f->clock != nullptr && (!clock || f->clock->pts0_ns != clock->pts0_ns || f->clock->clock != clock->clock)) {
            clock = *f->clock; // said once, and again when the sender's clock steps
            std::fprintf(stderr, "rdmarecv: the sender's pts 0 is %s\n", describe(*clock).c_str());
        }
        // One comparison: a payload too short for its planes goes to no output.
        stream->check_frame(f->header.sequence, f->payload.size());
        counters.gaps += f->header.sequence - expected_seq[flow]; // frames a live sender dropped
        expected_seq[flow] = f->header.sequence + 1;
        holds.consume(*f, taking[flow]);
        const auto now = std::chrono::steady_clock::now();
        counters.stream_seconds = std::chrono::duration<double>(now - first_arrival).count();
        if (flow == 0) ++taken;
        ++counters.zero_copy;
        // A few virtual calls: the per-second line shows copies as they happen.
        FlowCounters& counted = counters.flows[flow];
        const std::uint64_t copied = copies_of(outputs, flow);
        counters.copied += copied - counted.copied;
        counted.copied = copied;
        ++counted.frames;
        if (report.tick(rx->stats(), counters) && metrics) publish(true);
    }
    std::signal(SIGINT, old);
    g_waker = nullptr;
    if (!ended) {
        rx->leave(); // the sender ends its stream as a success, not as a lost receiver
    }
    for (const auto& s : outputs) s->finish();
    count_copies(outputs, counters); // copies the outputs made as they drained
    if (metrics) publish(false);
    counters.zero_copy -= std::min(counters.zero_copy, counters.copied);
    report.finish(rx->stats(), counters, o.stats_json);
    if (!ended) {
        std::fprintf(stderr, "rdmarecv: stopped after %llu frames (%s) before the sender ended the stream; told it we "
                             "left\n",
                     static_cast<unsigned long long>(taken), g_stop ? "interrupted" : "--frames");
    }
    return g_stop ? 130 : 0;
}

} // namespace rdmastream::cli
