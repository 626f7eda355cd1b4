#include "receive_session.hpp"

#include "rdmastream_cli/rdma_device.hpp"
#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>

namespace rdmastream::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0; // Ctrl-C: stop, close the outputs properly
extern "C" void on_interrupt(int) { g_stop = 1; }

std::unique_ptr<FrameReceiver> open_receiver(const ReceiveOptions& o, const ConnectionPlan& plan) {
    RingConfig ring;
    ring.slots = o.connection.slots;
    ring.slot_size = o.slot_size;
    ring.device = o.connection.device;
    ring.live = o.connection.policy == "live"; // the sender drops frames rather than wait for us
    if (plan.listen) {
        Listener listener(plan.endpoint);
        std::fprintf(stderr, "rdmarecv: listening on %s:%u, %u slots of %u bytes\n",
                     plan.endpoint.host.empty() ? "*" : plan.endpoint.host.c_str(), listener.port(), ring.slots,
                     ring.slot_size);
        return FrameReceiver::accept(listener, ring, to_ms(o.connection.connect_timeout));
    }
    return FrameReceiver::connect(plan.endpoint, ring, to_ms(o.connection.connect_timeout));
}

} // namespace

int run_receive(const ReceiveOptions& o, const ConnectionPlan& plan, std::vector<std::unique_ptr<FrameSink>> sinks) {
    require_rdma_device(o.connection.device);
    const auto rx = open_receiver(o, plan);
    std::fprintf(stderr, "rdmarecv: sender connected%s\n", rx->huge_pages() ? " (ring on huge pages)" : "");
    const auto old = std::signal(SIGINT, on_interrupt);
    StatsReport report("rdmarecv", !o.quiet);
    FrameCounters counters;
    counters.path = "ring slot -> outputs in place";
    std::uint64_t expected_seq = 0, taken = 0;
    const auto idle = to_ms(o.connection.idle_timeout);
    bool ended = false;
    while (!g_stop && (o.frames == 0 || taken < o.frames)) {
        const auto f = rx->next(idle);
        if (!f) {
            ended = true;
            break;
        }
        if (f->format == nullptr) {
            throw ProtocolError("the sender sent a frame before announcing its format: rdmarecv needs raw video "
                                "with caps (rdmasend, or rdmasink from GStreamer)");
        }
        if (f->format_changed) {
            const RawVideoCaps caps = parse_caps_string(f->format->caps);
            std::fprintf(stderr, "rdmarecv: format %u: %s\n", f->format->id, f->format->caps.c_str());
            for (auto& s : sinks) s->start_format(*f->format, caps);
            if (taken > 0) ++counters.format_changes;
        }
        counters.gaps += f->header.sequence - expected_seq; // frames a live sender dropped
        expected_seq = f->header.sequence + 1;
        for (auto& s : sinks) s->consume(*f);
        rx->release(f->slot);
        ++taken;
        ++counters.zero_copy;
        report.tick(rx->stats(), counters);
    }
    std::signal(SIGINT, old);
    for (auto& s : sinks) {
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
