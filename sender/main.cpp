// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasend: decode an input's video and audio with FFmpeg and stream their frames over RDMA to
// rdmarecv (or the rdmasrc GStreamer element). Parses flags, then hands
// over to run_send; docs/cli.md is the user guide.
#include "send_session.hpp"
#include "stream_choice.hpp"

#include "rdmastream_cli/av_error.hpp"
#include "rdmastream_cli/program_errors.hpp"
#include "rdmastream_cli/program_info.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include <cstdio>

namespace cli = rdmastream::cli;

int main(int argc, char** argv) {
    cli::SendOptions o;
    bool realtime = false;
    bool verbose = false;
    bool no_audio = false;
    CLI::App app{"rdmasend: decode a programme (its best video and audio streams, as ffmpeg picks them) with FFmpeg "
                 "and send their frames over RDMA, one flow per stream, pictures straight from the decoder's "
                 "buffers.\nBy default it connects to a listening rdmarecv; see docs/cli.md.\n\n"
                 "Example: rdmarecv --framemd5 out.md5   and   rdmasend clip.mp4 --connect 192.0.2.1\n\n"
                 "Other streams: rdmasend clip.mkv --map 0:v:0 --map 0:a:1 --connect 192.0.2.1\n\n"
                 "Several receivers: rdmasend clip.mp4 --listen --receivers 2   and on each receiver   rdmarecv "
                 "--connect SENDER --framemd5 out.md5",
                 "rdmasend"};
    cli::add_version_flag(app);
    app.add_option("INPUT", o.input.url,
                   "anything FFmpeg opens: a file, a URL, or lavfi:GRAPH for a test source, e.g. "
                   "lavfi:testsrc2=size=1920x1080:rate=60")
        ->required();
    cli::add_connection_flags(app, o.connection, false);
    app.add_option("--receivers", o.receivers,
                   "with --listen: wait until N receivers have dialled in (up to --connect-timeout), then send each "
                   "frame to all of them from the same memory; more may join later (they get the next frame) and "
                   "any may leave; --slots caps the frames out across them (default 8)")
        ->check(CLI::Range(1u, 1000u));
    app.add_option("--max-receivers", o.max_receivers,
                   "with --receivers: at most N receivers at once (those joining included); one more is refused "
                   "\"busy\" at its connect request, before anything is allocated for it")
        ->check(CLI::Range(1u, 1000u))
        ->capture_default_str();
    app.add_option("--member-timeout", o.member_timeout,
                   "with --receivers: seconds one receiver may hold the others back (a lossless one that returns "
                   "no slot, a live one that acknowledges nothing); then it is cut, named in a message, and the "
                   "others go on")
        ->check(CLI::Range(0.01, 100000.0))
        ->capture_default_str();
    auto* stream = app.add_option("--stream", o.input.choice.video_index,
                                  "which video stream to send (0: the first video stream; video only, see --map); "
                                  "default: FFmpeg's best")
                       ->check(CLI::NonNegativeNumber);
    auto* map = app.add_option("--map", o.input.choice.maps,
                               "a stream to send, as ffmpeg's -map names it: 0:a:0 (the first audio stream), 0:v:1, "
                               "0:3, 0:a:m:language:eng ... (of input 0). Repeat it for more streams, each its own "
                               "flow, in this order (at most 15). Audio goes as the decoder gives it, one frame per "
                               "decoded frame; default: the best video stream and the best audio stream")
                    ->excludes(stream);
    app.add_flag("--no-audio", no_audio, "send the video alone (by default its best audio stream goes with it)")
        ->excludes(map);
    app.add_option("--audio-packet-ms", o.audio_packet_ms,
                   "cut each decoded audio frame into packets this many milliseconds long (a whole number of "
                   "samples; the last of a frame may be shorter), for receivers that want short packets, as "
                   "ST 2110-30's 1 ms; default: one packet per decoded frame, as the decoder gives it")
        ->check(CLI::Range(0.001, 1000.0));
    app.add_flag("--realtime", realtime, "send at the stream's own rate, from its timestamps (default: as fast as "
                                         "the receiver takes them)");
    app.add_option("--fps", o.fps,
                   "send the video at this many frames per second (its audio is left out: audio paces by "
                   "--realtime)")
        ->check(CLI::Range(0.01, 100000.0));
    app.add_flag("--loop", o.loop, "start the input again at its end (timestamps keep rising); stop with --frames "
                                   "or Ctrl-C");
    app.add_option("--frames", o.frames, "stop after N frames of the first stream (the video; 0: all)")
        ->capture_default_str();
    app.add_option("--pix-fmt", o.pix_fmt,
                   "convert to this FFmpeg pixel format with libswscale (e.g. yuv420p, nv12, rgba); default: "
                   "send what the decoder makes");
    app.add_option("--threads", o.input.threads, "decoder threads (0: FFmpeg decides)")->capture_default_str();
    app.add_flag("--no-zero-copy", o.force_copy,
                 "copy every frame into a registered buffer instead of decoding in place (for comparison)");
    cli::add_report_flags(app, o.stats_json, o.quiet, verbose);
    std::string metrics;
    cli::add_metrics_flag(app, metrics, true);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli::parse_error_status(app, e);
    }
    o.slots_given = app.count("--slots") > 0;
    if (realtime && app.count("--fps") > 0) {
        std::fprintf(stderr, "rdmasend: --realtime and --fps exclude each other: pick the stream's rate or yours\n");
        return 2;
    }
    o.pacing = realtime ? cli::Pacer::Mode::kRealtime
               : app.count("--fps") > 0 ? cli::Pacer::Mode::kFixedRate
                                        : cli::Pacer::Mode::kAsFastAsPossible;
    av_log_set_level(verbose ? AV_LOG_INFO : AV_LOG_ERROR);
    return cli::exit_status_of("rdmasend", [&] {
        // No enable_fork_safety(): rdmasend never forks, so its
        // registrations skip that cost (docs/tuning.md#fork-safety).
        if (app.count("--metrics") > 0) o.metrics = cli::parse_metrics_address(metrics);
        for (const std::string& m : o.input.choice.maps) cli::check_map_syntax(m);
        // --fps sets the pictures' rate: audio at its own would drift apart.
        o.input.choice.audio = !no_audio && app.count("--fps") == 0;
        o.input.choice.audio_left_out_by = app.count("--fps") > 0 && !no_audio ? "--fps" : "";
        // Before the connection plan: without --listen it would ask for --connect instead.
        if (o.receivers > 0 && app.count("--listen") == 0) {
            throw rdmastream::UserError("--receivers needs --listen: the receivers dial this sender (rdmarecv "
                                        "--connect THIS-HOST), so it must listen for them");
        }
        if (app.count("--max-receivers") > 0 && o.receivers == 0) {
            throw rdmastream::UserError("--max-receivers limits a fan-out: add --listen --receivers N");
        }
        if (o.receivers > o.max_receivers) {
            throw rdmastream::UserError(fmt::format("--receivers {} exceeds --max-receivers {}", o.receivers,
                                                    o.max_receivers));
        }
        const cli::ConnectionPlan plan = cli::connection_plan(app, o.connection, false);
        return cli::run_send(o, plan);
    });
}
