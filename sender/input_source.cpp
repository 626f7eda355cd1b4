// SPDX-License-Identifier: LGPL-2.1-or-later
#include "input_source.hpp"
#include "decoder_pool.hpp"
#include "stream_choice.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/macros.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#ifdef RDMASTREAM_HAVE_AVDEVICE
#include <libavdevice/version.h>
#endif
}

#include <dlfcn.h>

#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <string_view>

namespace rdmastream::cli {
namespace {

constexpr std::string_view kLavfiPrefix = "lavfi:";

// libavdevice, for its lavfi input only, is loaded when an input asks for
// it: linked, it and the ~80 libraries it pulls in (SDL, X11, PulseAudio,
// JACK, ...) would load, and unload, at every start of rdmasend, for files
// too. Returns why it could not, or empty once its inputs are registered.
std::string register_devices() {
#ifdef RDMASTREAM_HAVE_AVDEVICE
    static const std::string why = [] {
        const char* soname = "libavdevice.so." AV_STRINGIFY(LIBAVDEVICE_VERSION_MAJOR);
        void* lib = dlopen(soname, RTLD_NOW | RTLD_GLOBAL); // kept: its formats stay registered
        if (lib == nullptr) {
            return fmt::format("{} could not be loaded ({}): install it (Debian: libavdevice{})", soname, dlerror(),
                               LIBAVDEVICE_VERSION_MAJOR);
        }
        auto* register_all = reinterpret_cast<void (*)()>(dlsym(lib, "avdevice_register_all"));
        if (register_all == nullptr) {
            return fmt::format("{} has no avdevice_register_all", soname);
        }
        register_all();
        return std::string();
    }();
    return why;
#else
    return "this rdmasend was built without libavdevice's lavfi input: install libavdevice-dev and rebuild";
#endif
}

// "lavfi:testsrc2=size=1280x720" opens libavdevice's lavfi input on the graph.
InputContextPtr open_input(const std::string& url) {
    const AVInputFormat* forced = nullptr;
    std::string path = url;
    if (url.starts_with(kLavfiPrefix)) {
        if (const std::string why = register_devices(); !why.empty()) {
            throw UserError(fmt::format("cannot open {}: {}; or give a file", url, why));
        }
        forced = av_find_input_format("lavfi");
        if (forced == nullptr) {
            throw UserError(fmt::format("cannot open {}: libavdevice has no lavfi input; give a file", url));
        }
        path = url.substr(kLavfiPrefix.size());
    }
    AVFormatContext* raw = nullptr;
    if (const int rc = avformat_open_input(&raw, path.c_str(), forced, nullptr); rc < 0) {
        throw UserError(fmt::format("cannot open input {}: {}: check the path or URL exists and is readable "
                                    "(for a test source write lavfi:testsrc2=size=1280x720:rate=30)",
                                    url, av_error_text(rc)));
    }
    return InputContextPtr(raw);
}

} // namespace

InputSource::InputSource(const InputOptions& opts, DecoderPool* pool)
    : url_(opts.url), fmt_(open_input(opts.url)), pkt_(make_packet()), pool_(pool) {
    if (const int rc = avformat_find_stream_info(fmt_.get(), nullptr); rc < 0) {
        throw UserError(fmt::format("cannot read {}: avformat_find_stream_info failed: {}: the file is damaged or "
                                    "not a media file",
                                    url_, av_error_text(rc)));
    }
    const int index = choose_stream(fmt_.get(), opts.map, opts.stream, url_);
    stream_ = fmt_->streams[index];
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) { // other streams never leave the demuxer
        if (static_cast<int>(i) != index) fmt_->streams[i]->discard = AVDISCARD_ALL;
    }
    const bool audio = stream_->codecpar->codec_type == AVMEDIA_TYPE_AUDIO;
    const AVCodec* codec = avcodec_find_decoder(stream_->codecpar->codec_id);
    if (codec == nullptr) {
        throw UserError(fmt::format("{}: no decoder for {} codec {}: this FFmpeg cannot decode it; transcode it "
                                    "first (ffmpeg -i {} {} out.mkv)",
                                    url_, audio ? "audio" : "video", avcodec_get_name(stream_->codecpar->codec_id),
                                    url_, audio ? "-c:a flac" : "-c:v ffv1"));
    }
    dec_.reset(avcodec_alloc_context3(codec));
    if (!dec_) throw std::bad_alloc();
    check_av(avcodec_parameters_to_context(dec_.get(), stream_->codecpar), "avcodec_parameters_to_context", url_);
    dec_->pkt_timebase = stream_->time_base;
    dec_->thread_count = opts.threads;
    // Audio is decoded into FFmpeg's own buffers and copied (a few KiB a
    // frame): the pool hands out picture-sized chunks.
    attached_ = !audio && pool_ != nullptr && pool_->attach(dec_.get(), codec);
    if (const int rc = avcodec_open2(dec_.get(), codec, nullptr); rc < 0) {
        throw UserError(fmt::format("{}: cannot open the {} decoder: {}", url_, codec->name, av_error_text(rc)));
    }
    frame_rate_ = av_guess_frame_rate(fmt_.get(), stream_, nullptr);
    if (fmt_->start_time != AV_NOPTS_VALUE) { // ffmpeg shifts every input to start at 0; so do we
        start_pts_ = av_rescale_q(fmt_->start_time, AV_TIME_BASE_Q, stream_->time_base);
    }
    if (audio) {
        char layout[128] = "?";
        av_channel_layout_describe(&dec_->ch_layout, layout, sizeof layout);
        const char* format = av_get_sample_fmt_name(dec_->sample_fmt);
        description_ = fmt::format("{}: stream {} {} audio, {} Hz, {}, {}", url_, index, codec->name,
                                   dec_->sample_rate, layout, format ? format : "?");
        return;
    }
    description_ = fmt::format("{}: stream {} {} {}x{} {}, {}/{} fps", url_, index, codec->name, dec_->width,
                               dec_->height,
                               av_get_pix_fmt_name(dec_->pix_fmt) ? av_get_pix_fmt_name(dec_->pix_fmt) : "?",
                               frame_rate_.num, frame_rate_.den);
}

bool InputSource::feed() {
    if (draining_) {
        return false;
    }
    for (;;) {
        const int rc = av_read_frame(fmt_.get(), pkt_.get());
        if (rc == AVERROR(EAGAIN)) continue; // a live input with nothing yet
        if (rc < 0) {
            if (rc != AVERROR_EOF) { // a damaged file: what was read is decoded and sent, then the error
                throw MediaError("av_read_frame", rc, fmt::format("{}: reading stopped", url_));
            }
            draining_ = true;
            check_av(avcodec_send_packet(dec_.get(), nullptr), "avcodec_send_packet(drain)", url_);
            return true;
        }
        if (pkt_->stream_index != stream_->index) {
            av_packet_unref(pkt_.get());
            continue;
        }
        packet_break_ = pkt_->duration > 0 && prev_packet_pts_ != AV_NOPTS_VALUE && pkt_->pts != AV_NOPTS_VALUE &&
                        pkt_->pts - prev_packet_pts_ > pkt_->duration;
        prev_packet_pts_ = pkt_->pts;
        const int sent = avcodec_send_packet(dec_.get(), pkt_.get());
        av_packet_unref(pkt_.get());
        if (pool_ != nullptr) pool_->rethrow_pending();
        if (sent == AVERROR_INVALIDDATA) { // as ffmpeg does: report, skip the packet, go on
            ++corrupt_packets_;
            std::fprintf(stderr, "rdmasend: %s: a corrupt packet was skipped (%s)\n", url_.c_str(),
                         av_error_text(sent).c_str());
            continue;
        }
        check_av(sent, "avcodec_send_packet", url_);
        return true;
    }
}

bool InputSource::next(AVFrame* out) {
    av_frame_unref(out);
    for (;;) {
        const int rc = avcodec_receive_frame(dec_.get(), out);
        if (rc == 0) return true;
        if (pool_ != nullptr) pool_->rethrow_pending();
        if (rc == AVERROR_EOF) return false;
        if (rc == AVERROR_INVALIDDATA) { // lost this picture, the stream goes on
            ++corrupt_packets_;
            continue;
        }
        if (rc != AVERROR(EAGAIN)) check_av(rc, "avcodec_receive_frame", url_);
        if (!feed()) return false;
    }
}

void InputSource::rewind() {
    check_av(av_seek_frame(fmt_.get(), -1, fmt_->start_time != AV_NOPTS_VALUE ? fmt_->start_time : 0,
                           AVSEEK_FLAG_BACKWARD),
             "av_seek_frame", fmt::format("{}: --loop cannot go back to the start", url_));
    avcodec_flush_buffers(dec_.get());
    draining_ = false;
    prev_packet_pts_ = AV_NOPTS_VALUE;
}

AVRational InputSource::sample_aspect_ratio(const AVFrame& f) const noexcept {
    return av_guess_sample_aspect_ratio(fmt_.get(), stream_, const_cast<AVFrame*>(&f));
}

double InputSource::progress(std::int64_t pts) const noexcept {
    if (fmt_->duration <= 0 || pts == AV_NOPTS_VALUE) return -1;
    const double t = static_cast<double>(av_rescale_q(pts - start_pts_, stream_->time_base, AV_TIME_BASE_Q));
    return std::clamp(t / static_cast<double>(fmt_->duration), 0.0, 1.0);
}

} // namespace rdmastream::cli
