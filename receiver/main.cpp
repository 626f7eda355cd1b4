// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmarecv: receive a programme's frames (video, audio) over RDMA from
// rdmasend (or rdmasink) and write them to files, checksums, a GStreamer
// pipeline or nowhere. Parses flags, builds the
// outputs, hands over to run_receive; docs/cli.md is the user guide.
#include "framemd5_sink.hpp"
#include "gst_sink.hpp"
#include "output_sink.hpp"
#include "receive_session.hpp"
#include "slot_release_queue.hpp"

#include "rdmastream_cli/program_errors.hpp"
#include "rdmastream_cli/program_info.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/fork_safety.hpp"
#include "rdmastream/format.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace cli = rdmastream::cli;

int main(int argc, char** argv) {
    cli::ReceiveOptions o;
    std::string framemd5, codec, pipeline;
    std::vector<std::string> output;
    bool null_output = false;
    std::uint32_t copy_threshold = cli::kDefaultCopyThreshold;
    bool verbose = false;
    CLI::App app{"rdmarecv: receive video frames over RDMA (from rdmasend or GStreamer's rdmasink) and write them "
                 "out.\nBy default it listens on every address; see docs/cli.md.\n\n"
                 "Example: rdmarecv -o got.mkv   and   rdmasend clip.mp4 --connect 192.0.2.1\n\n"
                 "Into GStreamer: rdmarecv --gst \"videoconvert ! autovideosink\"\n\n"
                 "Checksums as ffmpeg -f framemd5 writes them: rdmarecv --framemd5 got.md5",
                 "rdmarecv"};
    cli::add_version_flag(app);
    cli::add_connection_flags(app, o.connection, true);
    app.add_option("--framemd5", framemd5,
                   "write one MD5 per frame of every flow to FILE (- for stdout), exactly as `ffmpeg -map 0:v:0 "
                   "-map 0:a:0 -f framemd5` does for the same streams");
    app.add_option("-o,--output", output,
                   "write the programme to FILE, in the format its name says (.y4m, .nut, .mkv: raw video, no "
                   "encoding; others need --codec; audio as PCM where the type holds it: .mkv, .nut, .mov, .wav). "
                   "Repeat it for more files, each taking what its type holds, e.g. -o pictures.y4m -o sound.wav");
    app.add_option("--codec", codec,
                   "encode -o's frames with this FFmpeg encoder (e.g. libx264, ffv1, mjpeg; rawvideo: none); "
                   "default: raw video where the file type takes it");
    app.add_option("--gst", pipeline,
                   "push the frames, without a copy, into the GStreamer pipeline `appsrc ! PIPELINE` (e.g. "
                   "\"videoconvert ! autovideosink\"); flow N of a programme (its sound: flow 1) comes out of "
                   "an appsrc named flowN wherever PIPELINE links from flowN. (e.g. \"videoconvert ! autovideosink "
                   "flow1. ! audioconvert ! autoaudiosink\"); an element named rdmastats with a text property (e.g. "
                   "textoverlay name=rdmastats) shows each frame's number, pts and one-way latency");
    app.add_option("--copy-threshold", copy_threshold,
                   "--gst: ring slots to keep out of the pipeline's hands; a frame whose slot would leave the "
                   "sender fewer is copied out and its slot handed back at once, so an element that holds "
                   "buffers (a queue, filesink batching small ones, a slow appsink) costs copies (the stats' "
                   "copies), not a stalled stream. At most --slots - 1 take effect; 0: never copy")
        ->capture_default_str();
    app.add_flag("--null", null_output, "take the frames of every flow and drop them (measures the transport)");
    app.add_option("--path-skew", o.path_skew_ms,
                   "two paths, live policy: milliseconds to wait for a frame one path may still bring once the "
                   "other brought a later one, before it counts as missing (ST 2022-7's skew between paths)")
        ->check(CLI::Range(1.0, 60000.0))
        ->capture_default_str();
    app.add_option("--frames", o.frames,
                   "stop after N frames of the first flow (the video; 0: until the sender ends the stream)")
        ->capture_default_str();
    app.add_option("--slot-size", o.slot_size,
                   "bytes per ring slot to start with; the ring grows when the sender's frames need more")
        ->check(CLI::Range(static_cast<std::uint32_t>(rdmastream::kSlotHeaderBytes + 1), 1u << 30))
        ->capture_default_str();
    app.add_option("--max-frame-bytes", o.max_frame_bytes,
                   "the largest frame (payload bytes) a sender may announce; a stream format above it is refused")
        ->check(CLI::Range(1u, (1u << 30) - static_cast<std::uint32_t>(rdmastream::kSlotHeaderBytes)))
        ->capture_default_str();
    app.add_option("--max-ring-bytes", o.max_ring_bytes,
                   "the most memory the ring (slots x slot size) may pin when a sender's frames make it grow; a "
                   "stream format needing more is refused. This, not the memlock limit, bounds what a sender can "
                   "make rdmarecv pin")
        ->check(CLI::Range(std::uint64_t{1}, UINT64_MAX))
        ->capture_default_str();
    app.add_flag("--memory-windows,!--no-memory-windows", o.memory_windows,
                 "a type 2 memory window per ring slot, bound only while the sender holds the slot's credit, so "
                 "the NIC refuses a sender's write into a frame rdmarecv still holds (without: the ring is one "
                 "remote-writable region and such a write is refused only after it landed). Off by default: on "
                 "Soft-RoCE a lossy wire stalls a stream with windows (docs/security.md)");
    cli::add_report_flags(app, o.stats_json, o.quiet, verbose);
    std::string metrics;
    cli::add_metrics_flag(app, metrics, false);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::parse_error_status(app, e);
    }
    av_log_set_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR);
    return cli::exit_status_of("rdmarecv", [&] {
        // First, before any connection or registration: --gst loads
        // GStreamer, which forks its plugin scanner (docs/tuning.md#fork-safety).
        rdmastream::enable_fork_safety();
        if (app.count("--metrics") > 0) o.metrics = cli::parse_metrics_address(metrics);
        const cli::ConnectionPlan plan = cli::connection_plan(app, o.connection, true);
        if (!codec.empty() && output.empty()) {
            throw rdmastream::UserError("--codec " + codec + " encodes what -o writes: add -o FILE");
        }
        // Before the sinks: they hand slots back through it until they are gone.
        cli::SlotReleaseQueue released(o.connection.slots, cli::slot_numbers(o, plan));
        std::vector<std::unique_ptr<cli::FrameSink>> sinks;
        if (!framemd5.empty()) sinks.push_back(std::make_unique<cli::FrameMd5Sink>(framemd5));
        for (const std::string& file : output) {
            sinks.push_back(std::make_unique<cli::OutputSink>(file, codec, released));
        }
        if (!pipeline.empty()) sinks.push_back(std::make_unique<cli::GstSink>(pipeline, released, copy_threshold));
        if (null_output) sinks.push_back(std::make_unique<cli::NullSink>());
        if (sinks.empty()) {
            throw rdmastream::UserError("no output: give --framemd5 FILE, -o FILE, --gst PIPELINE or --null");
        }
        return cli::run_receive(o, plan, std::move(sinks), released);
    });
}
