// SPDX-License-Identifier: LGPL-2.1-or-later
#include "input_source.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/macros.h>
#ifdef RDMASTREAM_HAVE_AVDEVICE
#include <libavdevice/version.h>
#endif
}

#include <dlfcn.h>

#include <fmt/format.h>

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
    : url_(opts.url), fmt_(open_input(opts.url)), pkt_(make_packet()) {
    if (const int rc = avformat_find_stream_info(fmt_.get(), nullptr); rc < 0) {
        throw UserError(fmt::format("cannot read {}: avformat_find_stream_info failed: {}: the file is damaged or "
                                    "not a media file",
                                    url_, av_error_text(rc)));
    }
    const std::vector<int> chosen = choose_streams(fmt_.get(), opts.choice, url_);
    flow_of_stream_.assign(fmt_->nb_streams, -1);
    bool pool_taken = false;
    for (const int index : chosen) {
        AVStream* s = fmt_->streams[index];
        const bool video = s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO;
        DecoderPool* p = video && !pool_taken ? pool : nullptr; // one pool: the first video stream's
        pool_taken = pool_taken || video;
        flow_of_stream_[static_cast<std::size_t>(index)] = static_cast<int>(decoders_.size());
        decoders_.push_back(std::make_unique<StreamDecoder>(fmt_.get(), s, opts.threads, p, url_));
    }
    for (unsigned i = 0; i < fmt_->nb_streams; ++i) { // other streams never leave the demuxer
        if (flow_of_stream_[i] < 0) fmt_->streams[i]->discard = AVDISCARD_ALL;
    }
}

bool InputSource::feed() {
    if (draining_) return false;
    for (;;) {
        const int rc = av_read_frame(fmt_.get(), pkt_.get());
        if (rc == AVERROR(EAGAIN)) continue; // a live input with nothing yet
        if (rc < 0) {
            if (rc != AVERROR_EOF) { // a damaged file: what was read is decoded and sent, then the error
                throw MediaError("av_read_frame", rc, fmt::format("{}: reading stopped", url_));
            }
            draining_ = true;
            for (const auto& d : decoders_) d->drain();
            current_ = 0;
            return true;
        }
        const auto stream = static_cast<std::size_t>(pkt_->stream_index);
        const int flow = stream < flow_of_stream_.size() ? flow_of_stream_[stream] : -1;
        if (flow < 0) {
            av_packet_unref(pkt_.get());
            continue;
        }
        const bool decoded = decoders_[static_cast<std::size_t>(flow)]->send(*pkt_);
        av_packet_unref(pkt_.get());
        if (!decoded) continue;
        current_ = static_cast<std::size_t>(flow);
        return true;
    }
}

std::optional<std::size_t> InputSource::next(AVFrame* out) {
    av_frame_unref(out);
    for (;;) {
        const int rc = decoders_[current_]->receive(out);
        if (rc == 0) return current_;
        if (rc == AVERROR_EOF) { // drained: the next decoder's last frames, then the end
            if (++current_ < decoders_.size()) continue;
            current_ = decoders_.size() - 1;
            return std::nullopt;
        }
        if (!feed()) return std::nullopt;
    }
}

void InputSource::rewind() {
    check_av(av_seek_frame(fmt_.get(), -1, fmt_->start_time != AV_NOPTS_VALUE ? fmt_->start_time : 0,
                           AVSEEK_FLAG_BACKWARD),
             "av_seek_frame", fmt::format("{}: --loop cannot go back to the start", url_));
    for (const auto& d : decoders_) d->flush();
    draining_ = false;
    current_ = 0;
}

AVRational InputSource::sample_aspect_ratio(std::size_t i, const AVFrame& f) const noexcept {
    return av_guess_sample_aspect_ratio(fmt_.get(), decoders_[i]->stream(), const_cast<AVFrame*>(&f));
}

std::int64_t InputSource::start_pts(std::size_t i) const noexcept {
    if (fmt_->start_time == AV_NOPTS_VALUE) return 0; // ffmpeg shifts every input to start at 0; so do we
    return av_rescale_q(fmt_->start_time, AV_TIME_BASE_Q, decoders_[i]->time_base());
}

double InputSource::progress(std::size_t i, std::int64_t pts) const noexcept {
    if (fmt_->duration <= 0 || pts == AV_NOPTS_VALUE) return -1;
    const double t =
        static_cast<double>(av_rescale_q(pts - start_pts(i), decoders_[i]->time_base(), AV_TIME_BASE_Q));
    return std::clamp(t / static_cast<double>(fmt_->duration), 0.0, 1.0);
}

std::uint64_t InputSource::corrupt_packets() const noexcept {
    std::uint64_t n = 0;
    for (const auto& d : decoders_) n += d->corrupt();
    return n;
}

} // namespace rdmastream::cli
