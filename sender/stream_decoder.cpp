// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream_decoder.hpp"
#include "decoder_pool.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
}

#include <fmt/format.h>

#include <cstdio>

namespace rdmastream::cli {

StreamDecoder::StreamDecoder(AVFormatContext* input, AVStream* stream, int threads, DecoderPool* pool,
                             const std::string& url)
    : stream_(stream), url_(url), pool_(pool), audio_(stream->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
    const AVCodec* codec = avcodec_find_decoder(stream_->codecpar->codec_id);
    if (codec == nullptr) {
        throw UserError(fmt::format("{}: no decoder for {} codec {} (stream 0:{}): this FFmpeg cannot decode it; "
                                    "transcode it first (ffmpeg -i {} {} out.mkv){}",
                                    url_, audio_ ? "audio" : "video", avcodec_get_name(stream_->codecpar->codec_id),
                                    stream_->index, url_, audio_ ? "-c:a flac" : "-c:v ffv1",
                                    audio_ ? ", or leave it out (--no-audio, or --map the others)" : ""));
    }
    dec_.reset(avcodec_alloc_context3(codec));
    if (!dec_) throw std::bad_alloc();
    check_av(avcodec_parameters_to_context(dec_.get(), stream_->codecpar), "avcodec_parameters_to_context", url_);
    dec_->pkt_timebase = stream_->time_base;
    dec_->thread_count = threads;
    // Audio is decoded into FFmpeg's own buffers and copied (a few KiB a
    // frame): the pool hands out picture-sized chunks.
    attached_ = !audio_ && pool_ != nullptr && pool_->attach(dec_.get(), codec);
    if (const int rc = avcodec_open2(dec_.get(), codec, nullptr); rc < 0) {
        throw UserError(fmt::format("{}: cannot open the {} decoder: {}", url_, codec->name, av_error_text(rc)));
    }
    frame_rate_ = av_guess_frame_rate(input, stream_, nullptr);
    if (audio_) {
        char layout[128] = "?";
        av_channel_layout_describe(&dec_->ch_layout, layout, sizeof layout);
        const char* format = av_get_sample_fmt_name(dec_->sample_fmt);
        description_ = fmt::format("{}: stream {} {} audio, {} Hz, {}, {}", url_, stream_->index, codec->name,
                                   dec_->sample_rate, layout, format ? format : "?");
        return;
    }
    const char* pix = av_get_pix_fmt_name(dec_->pix_fmt);
    description_ = fmt::format("{}: stream {} {} {}x{} {}, {}/{} fps", url_, stream_->index, codec->name, dec_->width,
                               dec_->height, pix ? pix : "?", frame_rate_.num, frame_rate_.den);
}

bool StreamDecoder::send(const AVPacket& packet) {
    packet_break_ = packet.duration > 0 && prev_packet_pts_ != AV_NOPTS_VALUE && packet.pts != AV_NOPTS_VALUE &&
                    packet.pts - prev_packet_pts_ > packet.duration;
    prev_packet_pts_ = packet.pts;
    const int sent = avcodec_send_packet(dec_.get(), &packet);
    if (pool_ != nullptr) pool_->rethrow_pending();
    if (sent == AVERROR_INVALIDDATA) { // as ffmpeg does: report, skip the packet, go on
        ++corrupt_;
        std::fprintf(stderr, "rdmasend: %s: a corrupt packet of stream 0:%d was skipped (%s)\n", url_.c_str(),
                     stream_->index, av_error_text(sent).c_str());
        return false;
    }
    check_av(sent, "avcodec_send_packet", url_);
    return true;
}

void StreamDecoder::drain() { check_av(avcodec_send_packet(dec_.get(), nullptr), "avcodec_send_packet(drain)", url_); }

int StreamDecoder::receive(AVFrame* out) {
    for (;;) {
        const int rc = avcodec_receive_frame(dec_.get(), out);
        if (rc == 0) return 0;
        if (pool_ != nullptr) pool_->rethrow_pending();
        if (rc == AVERROR_INVALIDDATA) { // lost this picture, the stream goes on
            ++corrupt_;
            continue;
        }
        if (rc != AVERROR(EAGAIN) && rc != AVERROR_EOF) check_av(rc, "avcodec_receive_frame", url_);
        return rc;
    }
}

void StreamDecoder::flush() {
    avcodec_flush_buffers(dec_.get());
    prev_packet_pts_ = AV_NOPTS_VALUE;
    packet_break_ = false;
}

} // namespace rdmastream::cli
