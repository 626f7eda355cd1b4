// SPDX-License-Identifier: LGPL-2.1-or-later
#include "send_session.hpp"
#include "rdmastream_cli/av_time.hpp"
#include "audio_frames.hpp"
#include "decoder_pool.hpp"
#include "frame_payload.hpp"
#include "rdmastream_cli/av_side_data.hpp"
#include "interrupt.hpp"
#include "open_sender.hpp"

#include "rdmastream_cli/av_error.hpp"
#include "rdmastream_cli/metrics_exporter.hpp"
#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_cli/rdma_device.hpp"
#include "rdmastream_cli/stats_report.hpp"
#include "rdmastream/no_time.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/sender.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <optional>
#include <vector>

namespace rdmastream::cli {
namespace {

constexpr const char* kLatencyIs = "from posting a frame to its delivery";

// A wait in the transport ended without the frame in hand taken: Ctrl-C
// woke it (Interrupt), or the receiver left (the sender's state() kLeft).
// The loop ends, and tells which.
struct NotTaken {};

// A frame the transport may still be reading: the decoded picture's
// reference (in place) keeps its chunk from the decoder until on_done.
struct InFlight {
    FramePtr picture = make_frame();
    bool busy = false;
    std::uint64_t number = 0;
};

std::uint16_t frame_flags(const AVFrame& f, bool discont) {
    std::uint16_t flags = discont ? 1u : 0u;
    if (!f.key_frame) flags |= 2u;
    if ((f.flags & AV_FRAME_FLAG_CORRUPT) || f.decode_error_flags) flags |= 8u;
    return flags;
}

class SendSession {
public:
    SendSession(const SendOptions& o, const ConnectionPlan& plan)
        : o_(o), pool_(std::make_unique<DecoderPool>()), source_(std::make_unique<InputSource>(o.input, pool_.get())),
          report_("rdmasend", !o.quiet, kLatencyIs, o.metrics.has_value()) {
        if (o.metrics) { // first: a taken port is refused before anything else starts
            metrics_ = std::make_unique<MetricsExporter>(*o.metrics, MetricsIdentity{"rdmasend", kLatencyIs});
            std::fprintf(stderr, "rdmasend: metrics at %s\n", metrics_->url().c_str());
        }
        if (!o.pix_fmt.empty()) {
            target_ = av_get_pix_fmt(o.pix_fmt.c_str());
            if (target_ == AV_PIX_FMT_NONE) {
                throw UserError(fmt::format("--pix-fmt {}: not an FFmpeg pixel format (see `ffmpeg -pix_fmts`)",
                                            o.pix_fmt));
            }
        }
        if (source_->audio()) refuse_video_flags();
        require_rdma_device(o.connection.device);
        std::fprintf(stderr, "rdmasend: %s\n", source_->describe().c_str());
        // The rate the stats compare against: the pace asked for, if any.
        if (o.pacing == Pacer::Mode::kFixedRate) {
            counters_.target_fps = o.fps;
        } else if (o.pacing == Pacer::Mode::kRealtime && source_->audio()) {
            if (source_->frame_size() > 0) { // frames of a fixed size: their rate
                counters_.target_fps = double(source_->sample_rate()) / source_->frame_size();
            }
        } else if (o.pacing == Pacer::Mode::kRealtime && source_->frame_rate().num > 0) {
            counters_.target_fps = av_q2d(source_->frame_rate());
        }
        connect(plan);
        if (tx_) publish_metrics(true);
    }

    ~SendSession() {
        // The pictures still in flight (after an error) must outlive the
        // sender, which reports them through on_done as it stops. So: the
        // decoder lets go of its pictures, the pools let go of their arenas
        // (each lives on while a picture holds a chunk, and its FrameMemory
        // keeps its registration as long), then the sender goes, then the
        // table of pictures.
        source_.reset();
        pool_.reset();
        sws_.reset();
        written_arena_.reset();
        tx_.reset();
    }

    int run() {
        if (!tx_) { // Ctrl-C while it waited: nothing was sent
            std::fprintf(stderr, "rdmasend: interrupted while waiting for %s\n",
                         o_.receivers > 0 ? "the receivers" : "the receiver");
            return 130;
        }
        FramePtr picture = make_frame();
        bool discont = true;
        std::int64_t loop_offset = 0, lap_end = 0;
        int status = 0;
        bool left = false; // the receiver has every frame it wants: nothing more to send or end
        try {
            for (;;) {
                if (interrupt_.requested() || (o_.frames > 0 && sent_ >= o_.frames)) break;
                if (!source_->next(picture.get())) {
                    if (!o_.loop || sent_ == 0) break;
                    source_->rewind();
                    audio_ts_.restart();
                    loop_offset = lap_end;
                    discont = true;
                    continue;
                }
                const std::int64_t duration =
                    audio_ ? AudioTimestamps::duration_ns(*picture) : frame_duration(*picture);
                std::int64_t pts = audio_ ? audio_ts_.pts_ns(*picture, loop_offset, source_->packet_break())
                                          : timestamp(*picture, loop_offset);
                if (pts == kNoTime) pts = next_pts_; // an elementary stream has none: count on, as ffmpeg does
                if (pts != kNoTime && duration != kNoTime) next_pts_ = pts + duration;
                if (pts != kNoTime) lap_end = std::max(lap_end, pts + (duration != kNoTime ? duration : 0));
                const FrameMeta meta{pts, duration, frame_flags(*picture, discont), {}};
                if (audio_) {
                    send_audio(*picture, meta);
                } else {
                    send(picture.get(), meta);
                }
                discont = false;
            }
        } catch (const MediaError& e) { // a damaged input: the receiver still gets a clean end of stream
            std::fprintf(stderr, "rdmasend: %s: ending the stream after %llu frames\n", e.what(),
                         static_cast<unsigned long long>(sent_));
            status = 1;
        } catch (const NotTaken&) {
            left = receiver_left(); // if not, Ctrl-C: reported below, as one between two frames is
        }
        interrupt_.restore();
        if (const auto bad = source_->corrupt_packets(); bad > 0 && status == 0) {
            // ffmpeg itself only warns; a stream with holes is worth an exit
            // status a script can see.
            std::fprintf(stderr, "rdmasend: %s: %llu damaged packets were skipped, so frames are missing: the input "
                                 "is damaged (the receiver still gets a clean end of stream)\n",
                         o_.input.url.c_str(), static_cast<unsigned long long>(bad));
            status = 1;
        }
        if (!left) {
            tx_->finish(idle());
            left = receiver_left(); // it may leave while the last frames go
        }
        counters_.progress = -1;
        publish_metrics(false);
        report_.finish(tx_->stats(), counters_, o_.stats_json, peer_reports());
        if (interrupt_.requested()) {
            std::fprintf(stderr, "rdmasend: interrupted: the stream ended after %llu frames\n",
                         static_cast<unsigned long long>(sent_));
            return 130;
        }
        return status;
    }

private:
    std::chrono::milliseconds idle() const { return to_ms(o_.connection.idle_timeout); }

    // A receiver that stops after the frames it wanted ends the stream: a
    // success, since nothing it wanted was lost. Says so if it did.
    bool receiver_left() const {
        if (tx_->state() != SenderState::kLeft) return false;
        std::fprintf(stderr, "rdmasend: %s; the stream ends after %llu frames\n", tx_->leaving().c_str(),
                     static_cast<unsigned long long>(sent_));
        return true;
    }

    void connect(const ConnectionPlan& plan) {
        SenderConfig c;
        c.policy = o_.connection.policy == "live" ? Policy::kLive : Policy::kLossless;
        c.device = o_.connection.device;
        c.poll_mode = poll_mode(o_.connection);
        c.key = load_key(o_.connection, "rdmasend");
        c.on_done = [this](std::uint64_t cookie, FrameFate) {
            InFlight& f = in_flight_[cookie];
            av_frame_unref(f.picture.get()); // the chunk goes back once the decoder is done with it too
            f.busy = false;
        };
        c.waker = interrupt_.waker(); // Ctrl-C ends the wait for a receiver, a credit or a delivery
        c.open_timeout = to_ms(o_.connection.connect_timeout);
        c.max_in_flight = o_.slots_given ? o_.connection.slots : 0;
        c.receivers = o_.receivers;
        c.max_receivers = o_.max_receivers;
        c.member_timeout = to_ms(o_.member_timeout);
        tx_ = open_sender(plan, allow_list(o_.connection, plan), c);
        if (!tx_) return; // interrupted: run() says so
        // Sized once: on_done indexes it, and the decoder's pool is cut to match.
        in_flight_.resize(tx_->depth());
        pool_->bind(tx_->memory(), in_flight_.size());
    }

    std::int64_t timestamp(const AVFrame& f, std::int64_t loop_offset) const {
        const std::int64_t ts = f.best_effort_timestamp;
        if (ts == AV_NOPTS_VALUE) return kNoTime;
        return av_rescale_q(ts - source_->start_pts(), source_->time_base(), kNanoseconds) + loop_offset;
    }

    std::int64_t frame_duration(const AVFrame& f) const {
        if (f.pkt_duration > 0) return av_rescale_q(f.pkt_duration, source_->time_base(), kNanoseconds);
        const AVRational r = source_->frame_rate();
        return r.num > 0 ? av_rescale_q(1, av_inv_q(r), kNanoseconds) : kNoTime;
    }

    // Returns once frame `number`'s memory is free; NotTaken on Ctrl-C or
    // when the receiver left.
    void wait_done(std::uint64_t number) {
        bool done = false;
        try {
            done = tx_->wait_done(number, idle());
        } catch (const TimeoutError&) {
            if (o_.receivers == 0) throw;
            throw TimeoutError(fmt::format(
                "a receiver has held frame {} for {} ms: it stopped taking frames (a stuck lossless receiver "
                "holds every other one back); give it --policy live, or a longer --idle-timeout",
                number, idle().count()));
        }
        if (!done) throw NotTaken{};
    }

    // A free entry for the next frame: the oldest one, once the transport is done with it.
    std::size_t take_entry() {
        const std::size_t i = offered_ % in_flight_.size();
        if (in_flight_[i].busy) wait_done(in_flight_[i].number);
        return i;
    }

    void wait_all_done() {
        for (InFlight& f : in_flight_) {
            if (f.busy) wait_done(f.number);
        }
    }

    // Registered chunks for frames rdmasend writes itself (copies, conversions, audio), one per entry.
    std::span<std::byte> written_chunk(std::size_t entry, std::size_t size) {
        if (!written_arena_ || written_arena_->chunk_size() < size) {
            wait_all_done(); // no frame may still be read from the old chunks
            written_arena_.reset();
            written_arena_ = BufferArena::create(tx_->memory(), (size + 4095) / 4096 * 4096, in_flight_.size());
        }
        return written_arena_->chunk(entry);
    }

    bool needs_conversion(const AVFrame& picture) const noexcept {
        return target_ != AV_PIX_FMT_NONE && target_ != static_cast<AVPixelFormat>(picture.format);
    }

    // The payload of a picture the decoder wrote into a registered chunk: it
    // costs nothing to offer. nullopt when rdmasend must write it (a copy or
    // a conversion).
    std::optional<Payload> payload_of_decoded(const AVFrame& picture) {
        if (o_.force_copy || needs_conversion(picture)) {
            return std::nullopt;
        }
        const auto in_place = pool_->locate(picture);
        return in_place ? payload_in_place(picture, in_place->chunk, *in_place->memory) : std::nullopt;
    }

    // `picture` moves into the entry: its chunk stays out of the decoder's reuse until on_done.
    Payload keep_in_place(AVFrame* picture, std::size_t entry, const Payload& p) {
        av_frame_move_ref(in_flight_[entry].picture.get(), picture);
        ++counters_.zero_copy;
        path_ = "decoder -> registered pool (zero-copy)";
        return p;
    }

    // Converts (--pix-fmt) or copies the picture into the entry's registered chunk.
    Payload write_picture(const AVFrame& picture, std::size_t entry) {
        const auto src_fmt = static_cast<AVPixelFormat>(picture.format);
        if (needs_conversion(picture)) {
            const PayloadLayout layout = written_layout(target_, picture.width, picture.height);
            sws_.reset(sws_getCachedContext(sws_.release(), picture.width, picture.height, src_fmt,
                                            picture.width, picture.height, target_, SWS_BICUBIC,
                                            nullptr, nullptr, nullptr));
            if (!sws_) {
                throw UserError(fmt::format("--pix-fmt {}: libswscale cannot convert {} to it", o_.pix_fmt,
                                            av_get_pix_fmt_name(src_fmt)));
            }
            const auto chunk = written_chunk(entry, layout.size);
            convert_picture(sws_.get(), picture, chunk, layout);
            ++counters_.converted;
            path_ = "decoder -> libswscale into a registered buffer (one conversion)";
            return Payload{chunk.first(layout.size), &written_arena_->memory(), layout};
        }
        const PayloadLayout layout = written_layout(src_fmt, picture.width, picture.height);
        const auto chunk = written_chunk(entry, layout.size);
        copy_picture(picture, chunk, layout);
        ++counters_.copied;
        path_ = o_.force_copy ? "decoder -> one copy into a registered buffer (--no-zero-copy)"
                : source_->zero_copy_capable()
                    ? "decoder -> one copy into a registered buffer (the decoder's pool was exhausted or the "
                      "picture was not in it)"
                    : "decoder -> one copy into a registered buffer (the decoder cannot use caller buffers: no DR1)";
        return Payload{chunk.first(layout.size), &written_arena_->memory(), layout};
    }

    void announce(const PayloadLayout& layout, AVRational sar) {
        RawVideoCaps caps;
        caps.format = layout.format;
        caps.width = layout.width;
        caps.height = layout.height;
        caps.framerate = source_->frame_rate();
        caps.pixel_aspect_ratio = sar;
        StreamFormat f;
        f.id = static_cast<std::uint16_t>(format_id_ % 0xffff + 1);
        ++format_id_;
        f.max_frame_size = layout.size;
        f.max_side_data = kDefaultSideDataBytes; // captions, timecode, HDR metadata: frame_side_data.hpp
        f.planes = layout.planes;
        f.plane_count = layout.plane_count;
        f.caps = to_caps_string(caps);
        tx_->set_format(f, idle());
        announced_ = layout;
        if (format_id_ > 1) ++counters_.format_changes;
        std::fprintf(stderr, "rdmasend: format %u: %s, %u-byte frames\n", f.id, f.caps.c_str(), f.max_frame_size);
    }

    // The live policy decides before anything is written. A frame the
    // transport cannot post at once would become its pending frame, to be
    // dropped when the next one comes: a copy (or conversion) for nothing,
    // once per decoded frame while the receiver lags. So a frame that needs
    // writing and finds no free slot is dropped here, unwritten, and the
    // next one gets the slot that comes home. Keeping the newest picture (a
    // reference) pending here instead, to write it once a slot is free,
    // would cost more code for little: unpaced, the next picture is decoded
    // at once; paced, the connection is serviced when the pacer wakes, at
    // the next picture's due time (or every 100 ms below 10 frames/s), and
    // that picture is newer. A picture decoded in place costs nothing to
    // offer: the transport's own live policy handles it as before. Either
    // way the receiver sees the drop as a gap in the frame numbers.
    void send(AVFrame* picture, const FrameMeta& meta) {
        counters_.progress = source_->progress(picture->best_effort_timestamp);
        // Paced first: the decision below must see the slots that came home meanwhile.
        pacer_.wait(sent_, meta.pts, [this] { tx_->progress(); });
        const std::optional<Payload> decoded = payload_of_decoded(*picture);
        if (!decoded && !tx_->takes_frame_now()) {
            tx_->skip_frame();
            frame_handled();
            return;
        }
        const AVRational sar = source_->sample_aspect_ratio(*picture); // before the picture moves into the entry
        // Its side data moves with the picture's reference (the same buffers)
        // and is copied by the transport at send().
        FrameMeta with_side = meta;
        with_side.side_data = side_data_.of(*picture);
        const std::size_t entry = take_entry();
        const Payload p = decoded ? keep_in_place(picture, entry, *decoded) : write_picture(*picture, entry);
        InFlight& f = in_flight_[entry];
        try {
            if (!announced_ || !same_layout(*announced_, p.layout)) {
                announce(p.layout, sar);
            }
            tell_clock(meta.pts);
            f.busy = true;
            const std::optional<std::uint64_t> number = tx_->send(*p.memory, p.bytes, with_side, entry, idle());
            if (!number) throw NotTaken{};
            f.number = *number;
        } catch (...) {
            // Not taken (Ctrl-C, the receiver left, the stream failed): no
            // on_done will come for it, so the picture's chunk goes back
            // here, before the sender goes.
            av_frame_unref(f.picture.get());
            f.busy = false;
            throw;
        }
        ++offered_;
        counters_.path = path_;
        frame_handled();
    }

    // Audio flags that only mean something for pictures: refused, not ignored.
    void refuse_video_flags() const {
        if (o_.pacing == Pacer::Mode::kFixedRate) {
            throw UserError(fmt::format("--fps paces video frames, and --map {} is audio, whose frames last as long "
                                        "as their samples: use --realtime to send at the stream's own rate",
                                        o_.input.map));
        }
        if (!o_.pix_fmt.empty()) {
            throw UserError(fmt::format("--pix-fmt converts pictures, and --map {} is audio (sent as decoded): "
                                        "drop --pix-fmt",
                                        o_.input.map));
        }
    }

    void announce_audio(const RawAudioCaps& caps, std::uint32_t max_frame_size) {
        StreamFormat f;
        f.id = static_cast<std::uint16_t>(format_id_ % 0xffff + 1);
        ++format_id_;
        f.max_frame_size = max_frame_size;
        f.plane_count = 0; // planar audio: the caps' layout says where each channel is
        f.caps = to_caps_string(caps);
        tx_->set_format(f, idle());
        announced_audio_ = caps;
        announced_audio_max_ = max_frame_size;
        if (format_id_ > 1) ++counters_.format_changes;
        std::fprintf(stderr, "rdmasend: format %u: %s, frames of up to %u bytes\n", f.id, f.caps.c_str(),
                     f.max_frame_size);
    }

    // One decoded audio frame, one transport frame. Its samples are copied
    // into a registered chunk (one copy of a few KiB, counted as `copied`):
    // decoders allocate audio by their own rules and it costs little to
    // move. As for copied pictures, the live policy decides first. A new
    // format goes out when the caps change, or when a frame is larger than
    // the format announced (the receiver's ring grows for it); its bound is
    // at least the decoder's frame size, so frames that vary below it (Opus,
    // Vorbis) announce once.
    // Where pts 0 is, once, as the first frame goes: that frame is presented
    // now (paced: at its due time).
    void tell_clock(std::int64_t pts) {
        if (clock_told_ || pts == kNoTime) return;
        tx_->set_clock(anchor_now(pts), idle());
        clock_told_ = true;
    }

    void send_audio(const AVFrame& frame, const FrameMeta& meta) {
        counters_.progress = source_->progress(frame.best_effort_timestamp);
        pacer_.wait(sent_, meta.pts, [this] { tx_->progress(); });
        if (!tx_->takes_frame_now()) {
            tx_->skip_frame();
            frame_handled();
            return;
        }
        const RawAudioCaps caps = audio_caps_of(frame);
        const std::size_t size = audio_payload_size(frame);
        if (size == 0) { // a decoder's empty frame: nothing to hear, and receivers refuse empty audio frames
            frame_handled();
            return;
        }
        const std::size_t entry = take_entry();
        const auto chunk = written_chunk(entry, size);
        copy_audio(frame, chunk);
        ++counters_.copied;
        path_ = "decoder -> one copy into a registered buffer (audio: a few KiB a frame)";
        InFlight& f = in_flight_[entry];
        if (!announced_audio_ || !same_caps(*announced_audio_, caps) || size > announced_audio_max_) {
            const std::size_t usual = static_cast<std::size_t>(std::max(source_->frame_size(), 0)) *
                                      static_cast<std::size_t>(sample_frame_bytes(caps));
            announce_audio(caps, static_cast<std::uint32_t>(std::max(size, usual)));
        }
        f.busy = true;
        std::optional<std::uint64_t> number;
        try {
            tell_clock(meta.pts);
            number = tx_->send(written_arena_->memory(), chunk.first(size), meta, entry, idle());
        } catch (...) {
            f.busy = false; // not taken: no on_done will come for it
            throw;
        }
        if (!number) {
            f.busy = false;
            throw NotTaken{};
        }
        f.number = *number;
        ++offered_;
        counters_.path = path_;
        frame_handled();
    }

    void frame_handled() {
        ++sent_;
        if (report_.tick(tx_->stats(), counters_)) publish_metrics(true);
    }

    // Once a second (the stats tick), and as the stream starts and ends.
    // A fan-out's list of receivers is made here, not per frame.
    void publish_metrics(bool connected) {
        if (!metrics_) return;
        if (o_.receivers > 0) {
            const std::vector<PeerReport> peers = peer_reports();
            metrics_->publish(tx_->stats(), counters_, connected, true, peers);
        } else {
            metrics_->publish(tx_->stats(), counters_, connected);
        }
    }

    // A fan-out's receivers for the summary and --metrics (empty for one
    // receiver: the stream's own stats are its).
    std::vector<PeerReport> peer_reports() const {
        std::vector<PeerReport> out;
        for (ReceiverReport& r : tx_->receivers()) {
            out.push_back({std::move(r.peer), r.stats, r.policy == Policy::kLive ? "live" : "lossless", r.left});
        }
        return out;
    }

    const SendOptions& o_;
    std::unique_ptr<MetricsExporter> metrics_; // --metrics; null without
    std::vector<InFlight> in_flight_; // declared before tx_: on_done may fire while tx_ dies
    std::unique_ptr<Sender> tx_; // one receiver, or several (--receivers); null if Ctrl-C ended the wait
    std::unique_ptr<DecoderPool> pool_;
    std::shared_ptr<BufferArena> written_arena_; // chunks for the pictures written here (copies, conversions)
    std::unique_ptr<InputSource> source_;
    // After source_: a Ctrl-C while the input opens (a network input may
    // hang) still ends rdmasend at once, as without a handler.
    Interrupt interrupt_;
    SwsPtr sws_;
    AVPixelFormat target_ = AV_PIX_FMT_NONE;
    Pacer pacer_{o_.pacing, o_.fps};
    AvSideData side_data_; // the current picture's, packed for the transport
    bool clock_told_ = false; // the receiver(s) know where pts 0 is
    std::optional<PayloadLayout> announced_;
    const bool audio_ = source_->audio(); // --map named an audio stream: send_audio, not send
    AudioTimestamps audio_ts_{source_->time_base(), source_->start_pts()};
    std::optional<RawAudioCaps> announced_audio_;
    std::uint32_t announced_audio_max_ = 0;
    unsigned format_id_ = 0;
    std::uint64_t sent_ = 0;    // frames taken from the input: offered, or dropped unoffered (--frames, pacing)
    std::uint64_t offered_ = 0; // frames handed to tx_: the table's entries go round by it, as a fan-out's do
    std::int64_t next_pts_ = 0; // where the next frame would start, for inputs without timestamps
    FrameCounters counters_;
    const char* path_ = "";
    StatsReport report_;
};

} // namespace

int run_send(const SendOptions& opts, const ConnectionPlan& plan) {
    SendSession s(opts, plan);
    return s.run();
}

} // namespace rdmastream::cli
