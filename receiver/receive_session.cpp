#include "receive_session.hpp"

#include "rdmastream_cli/rdma_device.hpp"
#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <stdexcept>

namespace rdmastream::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0; // Ctrl-C: stop, close the outputs properly
Waker* g_waker = nullptr;                // and wake the receive loop's wait
extern "C" void on_interrupt(int) {
    g_stop = 1;
    if (g_waker != nullptr) g_waker->wake(); // async-signal-safe
}

std::unique_ptr<FrameReceiver> open_receiver(const ReceiveOptions& o, const ConnectionPlan& plan,
                                             std::shared_ptr<Waker> waker) {
    RingConfig ring;
    ring.slots = o.connection.slots;
    ring.slot_size = o.slot_size;
    ring.device = o.connection.device;
    ring.poll_mode = poll_mode(o.connection);
    ring.max_frame_bytes = o.max_frame_bytes;
    ring.max_ring_bytes = o.max_ring_bytes;
    ring.live = o.connection.policy == "live"; // the sender drops frames rather than wait for us
    ring.waker = std::move(waker);
    if (plan.listen) {
        Listener listener(plan.endpoint);
        std::fprintf(stderr, "rdmarecv: listening on %s:%u, %u slots of %u bytes\n",
                     plan.endpoint.host.empty() ? "*" : plan.endpoint.host.c_str(), listener.port(), ring.slots,
                     ring.slot_size);
        return FrameReceiver::accept(listener, ring, to_ms(o.connection.connect_timeout));
    }
    return FrameReceiver::connect(plan.endpoint, ring, to_ms(o.connection.connect_timeout));
}

// Who still holds each slot: the sinks that kept its frame. A slot's credit
// goes back when the count reaches zero. Receive loop's thread only.
class SlotHolds {
public:
    SlotHolds(FrameReceiver& rx, SlotReleaseQueue& released)
        : rx_(rx), released_(released), holders_(released.slots(), 0) {}

    // Gives the frame to every sink; releases the slot unless one kept it.
    // The count starts at sinks + 1 so that a sink handing the slot back
    // before consume returns cannot release it early.
    void consume(const ReceivedFrame& f, const std::vector<std::unique_ptr<FrameSink>>& sinks) {
        holders_[f.slot] = static_cast<std::uint32_t>(sinks.size()) + 1;
        for (const auto& s : sinks) {
            if (s->consume(f)) --holders_[f.slot];
        }
        ++held_;
        drop(f.slot);
    }
    // Returns the credits of slots the sinks handed back since the last call.
    void drain(const std::vector<std::unique_ptr<FrameSink>>& sinks) {
        for (const auto& s : sinks) s->collect_freed(); // into released_: one queue to drain
        released_.drain([this](std::uint16_t slot) { drop(slot); });
    }

private:
    void drop(std::uint16_t slot) {
        if (holders_[slot] == 0) {
            throw std::logic_error(fmt::format("an output handed back slot {} it did not hold", slot));
        }
        if (--holders_[slot] == 0) {
            --held_;
            rx_.release(slot);
        }
    }

    FrameReceiver& rx_;
    SlotReleaseQueue& released_;
    std::vector<std::uint32_t> holders_;
    std::uint32_t held_ = 0; // slots with a non-zero count
};

// The next frame; nullopt at end of stream or on Ctrl-C. One wait, woken by
// whatever needs the loop: a slot an output handed back (its credit goes
// out at once), a pipeline message, Ctrl-C. The idle timeout counts from
// the sender's last frame or keepalive, so a held slot never hides a stuck
// sender and a slow output never looks like one.
std::optional<ReceivedFrame> next_frame(FrameReceiver& rx, SlotHolds& holds, std::chrono::milliseconds idle,
                                       const std::vector<std::unique_ptr<FrameSink>>& sinks) {
    for (;;) {
        holds.drain(sinks);
        if (g_stop) return std::nullopt;
        FrameReceiver::Arrival a = rx.wait_frame(idle);
        if (a.kind == FrameReceiver::Arrival::kFrame) return std::move(a.frame);
        if (a.kind == FrameReceiver::Arrival::kEnd) return std::nullopt;
        for (const auto& s : sinks) s->check(); // woken: an output may have failed
    }
}

} // namespace

int run_receive(const ReceiveOptions& o, const ConnectionPlan& plan, std::vector<std::unique_ptr<FrameSink>> sinks,
                SlotReleaseQueue& released) {
    require_rdma_device(o.connection.device);
    const auto rx = open_receiver(o, plan, released.waker());
    // Declared after the ring: on any exit the outputs (and buffers still
    // pointing into slots) go first.
    const auto outputs = std::move(sinks);
    SlotHolds holds(*rx, released);
    std::fprintf(stderr, "rdmarecv: sender connected%s\n", rx->huge_pages() ? " (ring on huge pages)" : "");
    g_waker = released.waker().get();
    const auto old = std::signal(SIGINT, on_interrupt);
    StatsReport report("rdmarecv", !o.quiet, "one way, from the sender's clock to ours");
    FrameCounters counters;
    counters.path = "ring slot -> outputs in place";
    std::uint64_t expected_seq = 0, taken = 0;
    const auto idle = to_ms(o.connection.idle_timeout);
    // The current format, read and checked once; the outputs point into it.
    // Declared after them: they go first.
    std::optional<StreamLayout> stream;
    bool ended = false;
    while (!g_stop && (o.frames == 0 || taken < o.frames)) {
        const auto f = next_frame(*rx, holds, idle, outputs);
        if (!f) {
            ended = !g_stop;
            break;
        }
        if (f->format == nullptr) {
            throw ProtocolError("the sender sent a frame before announcing its format: rdmarecv needs raw video "
                                "with caps (rdmasend, or rdmasink from GStreamer)");
        }
        if (f->format_changed || !stream) {
            StreamLayout next = read_stream_layout(*f->format, rx->peer()); // refused before any output sees it
            std::fprintf(stderr, "rdmarecv: format %u: %s\n", f->format->id, f->format->caps.c_str());
            stream = std::move(next);
            for (const auto& s : outputs) s->start_format(*stream);
            if (taken > 0) ++counters.format_changes;
            const AVRational rate = stream->caps.framerate;
            counters.target_fps = rate.num > 0 ? av_q2d(rate) : 0; // the source's rate
        }
        // One comparison: a payload too short for its planes goes to no output.
        stream->layout.check_frame(f->header.sequence, f->payload.size());
        counters.gaps += f->header.sequence - expected_seq; // frames a live sender dropped
        expected_seq = f->header.sequence + 1;
        holds.consume(*f, outputs);
        ++taken;
        ++counters.zero_copy;
        report.tick(rx->stats(), counters);
    }
    std::signal(SIGINT, old);
    g_waker = nullptr;
    for (const auto& s : outputs) {
        s->finish();
        counters.copied += s->copies();
    }
    counters.zero_copy -= std::min(counters.zero_copy, counters.copied);
    report.finish(rx->stats(), counters, o.stats_json);
    if (!ended) {
        std::fprintf(stderr, "rdmarecv: stopped after %llu frames (%s) before the sender ended the stream\n",
                     static_cast<unsigned long long>(taken), g_stop ? "interrupted" : "--frames");
    }
    return g_stop ? 130 : 0;
}

} // namespace rdmastream::cli
