// SPDX-License-Identifier: LGPL-2.1-or-later
// Where rdmasend's frames go: one receiver (a FrameSender, the classic
// connection either side dials) or several that dial in (a FanoutSender,
// --receivers). The session's decode/send loop is the same for both: it
// registers its memory on pd(), sends from it in place, and learns through
// the on_done it passed in when a frame's memory is free again.
//
// Thread rule: the sending thread drives a FrameOut; on_done runs on it.
#pragma once

#include "rdmastream_cli/stats_report.hpp"

#include "stream/frame_sender.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace rdmastream::cli {

class FrameOut {
public:
    FrameOut() = default;
    FrameOut(const FrameOut&) = delete;
    FrameOut& operator=(const FrameOut&) = delete;
    // Stops every connection; frames still out come back through on_done.
    virtual ~FrameOut() = default;

    // Register frame memory here.
    virtual ibv_pd* pd() const noexcept = 0;
    // How many frames the session may have out at once (its table of
    // pictures and its registered buffers are sized by it).
    virtual std::size_t depth() const noexcept = 0;

    // As FrameSender::send: `cookie` comes back through on_done. Returns the
    // number wait_done() takes.
    virtual std::uint64_t send(std::span<const std::byte> payload, std::uint32_t lkey, const FrameMeta& meta,
                               std::uint64_t cookie, std::chrono::milliseconds timeout) = 0;
    virtual void set_format(const wire::StreamFormat& format, std::chrono::milliseconds timeout) = 0;
    // Credits, completions, keepalives, receivers joining; never blocks.
    virtual void progress() = 0;
    // Whether send() would post a frame now rather than keep it pending
    // (where the live policy may drop it): always under lossless (send()
    // waits for a slot); under live, when a slot is free. Services the
    // connections first if it must look at credits. The session asks before
    // writing a frame (a copy or a conversion), so that it never writes one
    // that would be thrown away.
    virtual bool takes_frame_now() = 0;
    // Counts a frame the session dropped without offering it (after
    // takes_frame_now() said no) in stats().drops; its number is skipped,
    // so receivers count it as a gap.
    virtual void drop_unoffered() = 0;
    // Returns once frame `number`'s memory is free (on_done has fired for it).
    virtual void wait_done(std::uint64_t number, std::chrono::milliseconds timeout) = 0;
    // Ends the stream for every receiver.
    virtual void finish(std::chrono::milliseconds timeout) = 0;

    // By value: a single connection adds the frames dropped unoffered to the
    // transport's own counts (a handful of integers, no allocation).
    virtual StreamStats stats() const noexcept = 0;
    // One entry per receiver for the summary; empty for a single connection
    // (the stream's own stats are that receiver's).
    virtual std::vector<PeerReport> receivers() const = 0;
};

struct OutOptions {
    SenderOptions sender;                   // policy, device, on_done
    std::chrono::milliseconds connect_timeout{60000};
    std::uint32_t max_in_flight = 0;        // --slots; 0: as the receiver's ring allows
    AllowList allow;                        // listening: who may connect (--allow); empty: everyone
    std::uint32_t max_receivers = 64;       // a fan-out: receivers at once (--max-receivers)
    std::chrono::milliseconds member_timeout{5000}; // a fan-out: one receiver's hold on the others (--member-timeout)
};

// One receiver: dials `peer`, or waits on `peer` for it when `listen`.
std::unique_ptr<FrameOut> open_single(const Endpoint& peer, bool listen, const OutOptions& opts);
// Several: listens on `local`, waits for `count` receivers to dial in, and
// admits more while streaming.
std::unique_ptr<FrameOut> open_fanout(const Endpoint& local, std::size_t count, const OutOptions& opts);

} // namespace rdmastream::cli
