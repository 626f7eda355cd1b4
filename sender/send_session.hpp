// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmasend's work: connect, decode the input, send every picture as a frame
// (in place when it can), announce the format before the first frame and on
// every change, pace, report, end the stream.
#pragma once

#include "input_source.hpp"
#include "pacer.hpp"

#include "rdmastream_cli/connection_flags.hpp"
#include "rdmastream_cli/metrics_address.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace rdmastream::cli {

struct SendOptions {
    InputOptions input;
    ConnectionFlags connection;
    bool slots_given = false;  // --slots caps the frames in flight below the receiver's ring
    Pacer::Mode pacing = Pacer::Mode::kAsFastAsPossible;
    double fps = 0;
    double audio_packet_ms = 0; // --audio-packet-ms: audio frames cut into packets this long; 0: as decoded
    bool loop = false;
    std::uint32_t receivers = 0; // --receivers N (with --listen): a fan-out; 0: one receiver
    std::uint32_t max_receivers = 64; // --max-receivers: a fan-out refuses more at once "busy"
    double member_timeout = 5;        // --member-timeout: seconds a fan-out waits for one receiver
    std::uint64_t frames = 0;  // 0: all (or forever with --loop)
    std::string pix_fmt;       // empty: the decoder's
    bool force_copy = false;   // --no-zero-copy: take the copy path (to compare, or to rule it out)
    std::string stats_json;
    bool quiet = false;
    std::optional<MetricsAddress> metrics; // --metrics: serve the counters over HTTP
};

// Returns the exit status; throws on errors (main reports them).
int run_send(const SendOptions& opts, const ConnectionPlan& plan);

} // namespace rdmastream::cli
