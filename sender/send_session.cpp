// SPDX-License-Identifier: LGPL-2.1-or-later
#include "send_session.hpp"
#include "audio_flow.hpp"
#include "decoder_pool.hpp"
#include "interrupt.hpp"
#include "open_sender.hpp"
#include "video_flow.hpp"

#include "rdmastream_cli/av_error.hpp"
#include "rdmastream_cli/av_time.hpp"
#include "rdmastream_cli/metrics_exporter.hpp"
#include "rdmastream_cli/rdma_device.hpp"
#include "rdmastream_cli/stats_report.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"
#include "rdmastream/sender.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <cstdio>
#include <deque>
#include <optional>
#include <vector>

namespace rdmastream::cli {
namespace {

constexpr const char* kLatencyIs = "from posting a frame to its delivery";

std::uint16_t frame_flags(const AVFrame& f, bool discont) {
    std::uint16_t flags = discont ? 1u : 0u;
    if (!f.key_frame) flags |= 2u;
    if ((f.flags & AV_FRAME_FLAG_CORRUPT) || f.decode_error_flags) flags |= 8u;
    return flags;
}

// A flow's timestamps: every flow's from the input's one start, in ns.
struct FlowClock {
    std::optional<AudioTimestamps> audio; // audio: put on the sample grid
    std::int64_t next_pts = 0;            // where the next frame would start, for inputs without timestamps
    bool discont = true;                  // the next frame follows a start or a --loop's jump
};

class SendSession {
public:
    SendSession(const SendOptions& o, const ConnectionPlan& plan)
        : o_(o), pool_(std::make_unique<DecoderPool>()), source_(std::make_unique<InputSource>(o.input, pool_.get())),
          report_("rdmasend", !o.quiet, kLatencyIs, o.metrics.has_value()) {
        if (o.metrics) { // first: a taken port is refused before anything else starts
            metrics_ = std::make_unique<MetricsExporter>(*o.metrics, MetricsIdentity{"rdmasend", kLatencyIs});
            std::fprintf(stderr, "rdmasend: metrics at %s\n", metrics_->url().c_str());
        }
        video_options_.force_copy = o.force_copy;
        if (!o.pix_fmt.empty()) {
            video_options_.pix_fmt = o.pix_fmt;
            video_options_.target = av_get_pix_fmt(o.pix_fmt.c_str());
            if (video_options_.target == AV_PIX_FMT_NONE) {
                throw UserError(fmt::format("--pix-fmt {}: not an FFmpeg pixel format (see `ffmpeg -pix_fmts`)",
                                            o.pix_fmt));
            }
        }
        bool any_video = false;
        for (std::size_t i = 0; i < source_->count(); ++i) {
            any_video = any_video || !source_->stream(i).audio();
            clocks_.push_back(FlowClock{});
            if (source_->stream(i).audio()) {
                clocks_.back().audio.emplace(source_->stream(i).time_base(), source_->start_pts(i));
            }
        }
        if (!any_video) refuse_video_flags();
        require_rdma_device(o.connection.device());
        require_rdma_device(o.connection.device_b());
        for (std::size_t i = 0; i < source_->count(); ++i) {
            std::fprintf(stderr, "rdmasend: %s%s\n", source_->count() > 1 ? fmt::format("flow {}: ", i).c_str() : "",
                         source_->stream(i).describe().c_str());
        }
        // The rate the stats compare against (the first flow's): the pace asked for, if any.
        const StreamDecoder& lead = source_->stream(0);
        if (o.pacing == Pacer::Mode::kFixedRate) {
            counters_.target_fps = o.fps;
        } else if (o.pacing == Pacer::Mode::kRealtime && lead.audio()) {
            if (lead.frame_size() > 0) { // frames of a fixed size: their rate
                counters_.target_fps = double(lead.sample_rate()) / lead.frame_size();
            }
        } else if (o.pacing == Pacer::Mode::kRealtime && lead.frame_rate().num > 0) {
            counters_.target_fps = av_q2d(lead.frame_rate());
        }
        connect(plan);
        if (tx_) publish_metrics(true);
    }

    ~SendSession() {
        // The pictures still in flight (after an error) must outlive the
        // sender, which reports them through on_done as it stops. So: the
        // decoders let go of their pictures, the pools let go of their
        // arenas (each lives on while a picture holds a chunk, and its
        // FrameMemory keeps its registration as long), then the sender
        // goes, then the flows' tables of pictures.
        source_.reset();
        pool_.reset();
        for (auto& v : video_) {
            if (v) v->release();
        }
        for (auto& a : audio_) {
            if (a) a->release();
        }
        tx_.reset();
    }

    int run() {
        if (!tx_) { // Ctrl-C while it waited: nothing was sent
            std::fprintf(stderr, "rdmasend: interrupted while waiting for %s\n",
                         o_.receivers > 0 ? "the receivers" : "the receiver");
            return 130;
        }
        FramePtr frame = make_frame();
        std::int64_t loop_offset = 0, lap_end = 0;
        std::deque<Primed> primed;
        int status = 0;
        bool left = false; // the receiver has every frame it wants: nothing more to send or end
        try {
            primed = prime();
            for (;;) {
                if (interrupt_.requested() || (o_.frames > 0 && sent_ >= o_.frames)) break;
                std::optional<std::size_t> flow;
                bool packet_break = false; // read as the frame is decoded: the next packet changes it
                if (!primed.empty()) {
                    flow = primed.front().flow;
                    packet_break = primed.front().packet_break;
                    av_frame_unref(frame.get());
                    av_frame_move_ref(frame.get(), primed.front().frame.get());
                    primed.pop_front();
                } else {
                    flow = source_->next(frame.get());
                    packet_break = flow && source_->stream(*flow).packet_break();
                }
                if (!flow) {
                    if (!o_.loop || sent_ == 0) break;
                    source_->rewind();
                    loop_offset = lap_end;
                    for (FlowClock& c : clocks_) {
                        if (c.audio) c.audio->restart();
                        c.discont = true;
                    }
                    continue;
                }
                const FrameMeta meta = meta_of(*frame, *flow, packet_break, loop_offset, lap_end);
                counters_.progress = source_->progress(*flow, frame->best_effort_timestamp);
                // Paced first: what the flow decides must see the slots that came home meanwhile.
                // --fps paces the first flow's frames (its video).
                if (o_.pacing != Pacer::Mode::kFixedRate || *flow == 0) {
                    pacer_.wait(sent_, meta.pts, [this] { tx_->progress(); });
                }
                if (video_[*flow]) {
                    const AVRational sar = source_->sample_aspect_ratio(*flow, *frame); // before the picture moves
                    video_[*flow]->send(frame.get(), meta, sar);
                } else {
                    audio_[*flow]->send(*frame, meta);
                }
                clocks_[*flow].discont = false;
                if (*flow == 0) ++sent_;
                if (report_.tick(tx_->stats(), counters_)) publish_metrics(true);
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

    // A frame decoded ahead, while the programme's formats are announced.
    struct Primed {
        std::size_t flow;
        FramePtr frame;
        bool packet_break; // StreamDecoder::packet_break as it was decoded
    };

    // Decodes until every flow has its first frame (at most kPrimeLimit
    // frames ahead, or the input's end) and announces each flow's format,
    // in flow order, before any frame goes: a receiver then knows the whole
    // programme at its first frame (Receiver::flows), as a file's header
    // needs. Returns the frames decoded, in decode order, to send first.
    std::deque<Primed> prime() {
        constexpr std::size_t kPrimeLimit = 32;
        std::deque<Primed> out;
        std::vector<const AVFrame*> first(source_->count(), nullptr);
        std::size_t missing = source_->count();
        while (missing > 0 && out.size() < kPrimeLimit && !interrupt_.requested()) {
            Primed p{0, make_frame(), false};
            const std::optional<std::size_t> flow = source_->next(p.frame.get());
            if (!flow) break;
            p.flow = *flow;
            p.packet_break = source_->stream(*flow).packet_break();
            if (first[*flow] == nullptr) {
                first[*flow] = p.frame.get();
                --missing;
            }
            out.push_back(std::move(p));
        }
        for (std::size_t i = 0; i < first.size(); ++i) {
            if (first[i] == nullptr) continue; // announced when its first frame comes, if ever
            if (video_[i]) {
                video_[i]->announce_for(*first[i], source_->sample_aspect_ratio(i, *first[i]));
            } else {
                audio_[i]->announce_for(*first[i]);
            }
        }
        return out;
    }

    FlowFrames& frames_of(std::uint8_t flow) noexcept {
        return video_[flow] ? video_[flow]->frames() : audio_[flow]->frames();
    }

    void connect(const ConnectionPlan& plan) {
        SenderConfig c;
        c.policy = o_.connection.policy == "live" ? Policy::kLive : Policy::kLossless;
        c.device = o_.connection.device();
        c.device_b = o_.connection.device_b();
        c.poll_mode = poll_mode(o_.connection);
        c.key = load_key(o_.connection, "rdmasend");
        c.on_done = [this](std::uint64_t cookie, FrameFate) { frames_of(FlowFrames::flow_of(cookie)).done(cookie); };
        c.waker = interrupt_.waker(); // Ctrl-C ends the wait for a receiver, a credit or a delivery
        c.open_timeout = to_ms(o_.connection.connect_timeout);
        c.max_in_flight = o_.slots_given ? o_.connection.slots : 0;
        c.receivers = o_.receivers;
        c.max_receivers = o_.max_receivers;
        c.member_timeout = to_ms(o_.member_timeout);
        tx_ = open_sender(plan, allow_list(o_.connection, plan), c);
        if (!tx_) return; // interrupted: run() says so
        if (plan.endpoint_b) {
            report_.set_paths([this] { return tx_->paths(); });
            if (metrics_) metrics_->set_paths([this] { return tx_->paths(); });
        }
        ctx_.emplace(SendContext{*tx_, idle(), o_.receivers > 0, counters_});
        bool pool_given = false; // the input gave the pool to its first video stream's decoder
        for (std::size_t i = 0; i < source_->count(); ++i) {
            const auto flow = static_cast<std::uint8_t>(i);
            const StreamDecoder& stream = source_->stream(i);
            if (stream.audio()) {
                audio_.push_back(std::make_unique<AudioFlow>(*ctx_, flow, stream, o_.audio_packet_ms));
                video_.emplace_back();
                continue;
            }
            video_.push_back(
                std::make_unique<VideoFlow>(*ctx_, flow, stream, pool_given ? nullptr : pool_.get(), video_options_));
            audio_.emplace_back();
            pool_given = true;
        }
    }

    // The frame's presentation time and duration on the stream's clock (ns
    // from the input's start, --loop's laps added), and its flags.
    FrameMeta meta_of(const AVFrame& f, std::size_t flow, bool packet_break, std::int64_t loop_offset,
                      std::int64_t& lap_end) {
        FlowClock& clock = clocks_[flow];
        const StreamDecoder& stream = source_->stream(flow);
        std::int64_t duration = kNoTime, pts = kNoTime;
        if (clock.audio) {
            duration = AudioTimestamps::duration_ns(f);
            pts = clock.audio->pts_ns(f, loop_offset, packet_break);
        } else {
            duration = frame_duration(f, stream);
            if (f.best_effort_timestamp != AV_NOPTS_VALUE) {
                pts = av_rescale_q(f.best_effort_timestamp - source_->start_pts(flow), stream.time_base(),
                                   kNanoseconds) +
                      loop_offset;
            }
        }
        if (pts == kNoTime) pts = clock.next_pts; // an elementary stream has none: count on, as ffmpeg does
        if (duration != kNoTime) clock.next_pts = pts + duration;
        lap_end = std::max(lap_end, pts + (duration != kNoTime ? duration : 0));
        FrameMeta meta{pts, duration, frame_flags(f, clock.discont), {}};
        return meta;
    }

    static std::int64_t frame_duration(const AVFrame& f, const StreamDecoder& stream) {
        if (f.pkt_duration > 0) return av_rescale_q(f.pkt_duration, stream.time_base(), kNanoseconds);
        const AVRational r = stream.frame_rate();
        return r.num > 0 ? av_rescale_q(1, av_inv_q(r), kNanoseconds) : kNoTime;
    }

    // Flags that only mean something for pictures, with nothing but audio
    // to send: refused, not ignored.
    void refuse_video_flags() const {
        const std::string what =
            o_.input.choice.maps.empty() ? o_.input.url + " has only audio" : "--map names only audio";
        if (o_.pacing == Pacer::Mode::kFixedRate) {
            throw UserError(fmt::format("--fps paces video frames, and {}, whose frames last as long as their "
                                        "samples: use --realtime to send at the stream's own rate",
                                        what));
        }
        if (!o_.pix_fmt.empty()) {
            throw UserError(fmt::format("--pix-fmt converts pictures, and {} (sent as decoded): drop --pix-fmt",
                                        what));
        }
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
            out.push_back({std::move(r.peer), r.stats, r.policy == Policy::kLive ? "live" : "lossless", r.left,
                           std::move(r.paths)});
        }
        return out;
    }

    const SendOptions& o_;
    std::unique_ptr<MetricsExporter> metrics_; // --metrics; null without
    FrameCounters counters_;
    VideoOptions video_options_;
    // The flows, indexed by flow id: one of the two is set for each. Declared
    // before tx_: on_done may fire while tx_ dies.
    std::vector<std::unique_ptr<VideoFlow>> video_;
    std::vector<std::unique_ptr<AudioFlow>> audio_;
    std::unique_ptr<Sender> tx_; // one receiver, or several (--receivers); null if Ctrl-C ended the wait
    std::optional<SendContext> ctx_;
    std::unique_ptr<DecoderPool> pool_;
    std::unique_ptr<InputSource> source_;
    // After source_: a Ctrl-C while the input opens (a network input may
    // hang) still ends rdmasend at once, as without a handler.
    Interrupt interrupt_;
    Pacer pacer_{o_.pacing, o_.fps};
    std::vector<FlowClock> clocks_;
    std::uint64_t sent_ = 0; // the first flow's frames taken from the input: offered, or dropped unoffered
    StatsReport report_;
};

} // namespace

int run_send(const SendOptions& opts, const ConnectionPlan& plan) {
    SendSession s(opts, plan);
    return s.run();
}

} // namespace rdmastream::cli
