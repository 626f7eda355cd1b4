// rdmarecv: receive video frames over RDMA from rdmasend (or rdmasink) and
// write them to files, checksums or nowhere. Parses flags, builds the
// outputs, hands over to run_receive; docs/cli.md is the user guide.
#include "framemd5_sink.hpp"
#include "receive_session.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/wire.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <CLI/CLI.hpp>

#include <cstdio>

namespace cli = rdmastream::cli;

int main(int argc, char** argv) {
    cli::ReceiveOptions o;
    std::string framemd5;
    bool null_output = false;
    bool verbose = false;
    CLI::App app{"rdmarecv: receive video frames over RDMA (from rdmasend or GStreamer's rdmasink) and write them "
                 "out.\nBy default it listens on every address; see docs/cli.md.\n\n"
                 "Example: rdmarecv --framemd5 out.md5   and   rdmasend clip.mp4 --connect 192.0.2.1"};
    cli::add_connection_flags(app, o.connection, true);
    app.add_option("--framemd5", framemd5,
                   "write one MD5 per frame to FILE (- for stdout), exactly as `ffmpeg -f framemd5` does");
    app.add_flag("--null", null_output, "take the frames and drop them (measures the transport)");
    app.add_option("--frames", o.frames, "stop after N frames (0: until the sender ends the stream)")
        ->capture_default_str();
    app.add_option("--slot-size", o.slot_size,
                   "bytes per ring slot to start with; the ring grows when the sender's frames need more")
        ->check(CLI::Range(static_cast<std::uint32_t>(rdmastream::wire::kSlotHeaderSize + 1), 1u << 30))
        ->capture_default_str();
    app.add_option("--stats-json", o.stats_json, "write the final stats as JSON to FILE (- for stdout)");
    app.add_flag("-q,--quiet", o.quiet, "no stats line every second (the summary still comes)");
    app.add_flag("-v,--verbose", verbose, "FFmpeg's own messages too");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    av_log_set_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR);
    try {
        const cli::ConnectionPlan plan = cli::connection_plan(app, o.connection, true);
        std::vector<std::unique_ptr<cli::FrameSink>> sinks;
        if (!framemd5.empty()) sinks.push_back(std::make_unique<cli::FrameMd5Sink>(framemd5));
        if (null_output) sinks.push_back(std::make_unique<cli::NullSink>());
        if (sinks.empty()) {
            throw rdmastream::UserError("no output: give --framemd5 FILE, -o FILE, --gst PIPELINE or --null");
        }
        return cli::run_receive(o, plan, std::move(sinks));
    } catch (const rdmastream::UserError& e) {
        std::fprintf(stderr, "rdmarecv: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdmarecv: error: %s\n", e.what());
        return 1;
    }
}
