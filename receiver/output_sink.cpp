// SPDX-License-Identifier: LGPL-2.1-or-later
// OutputSink's control path: choose the muxer and the codec, open the file,
// write the header at the first format, flush and close at the end. The
// per-frame path is output_sink_frame.cpp.
#include "output_sink.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace rdmastream::cli {
namespace {

const char* pix_name(AVPixelFormat f) {
    const char* n = av_get_pix_fmt_name(f);
    return n ? n : "none";
}

bool muxer_takes(const AVOutputFormat* of, AVCodecID id) {
    // 1: yes; 0: no; negative: the muxer cannot tell, so let the header decide.
    return avformat_query_codec(of, id, FF_COMPLIANCE_NORMAL) != 0;
}

} // namespace

OutputSink::OutputSink(const std::string& path, const std::string& codec, SlotReleaseQueue& released)
    : path_(path), released_(released), tickets_(released.capacity()), codec_name_(codec) {
    for (std::size_t i = 0; i < tickets_.size(); ++i) tickets_[i] = Ticket{this, static_cast<std::uint16_t>(i)};
    // Guessed first: the alloc call would log its own line for an unknown name.
    AVFormatContext* raw = nullptr;
    if (av_guess_format(nullptr, path.c_str(), nullptr) == nullptr ||
        avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()) < 0 || raw == nullptr) {
        throw UserError(fmt::format("-o {}: FFmpeg knows no file type by that name: end it in .y4m, .nut, .mkv, "
                                    ".mov or .avi (`ffmpeg -muxers` lists them all)",
                                    path));
    }
    out_.reset(raw);
    const AVOutputFormat* of = out_->oformat;
    const std::string suggestion = "give --codec NAME (e.g. --codec libx264, --codec ffv1 or --codec mjpeg), or "
                                   "write .y4m, .nut or .mkv";
    if (of->video_codec == AV_CODEC_ID_NONE && of->audio_codec != AV_CODEC_ID_NONE) {
        mode_ = Mode::kAudioOnly; // .wav, .flac ...: audio only (start_audio checks the codec; --codec is for video)
    } else if (codec.empty() && of->video_codec == AV_CODEC_ID_WRAPPED_AVFRAME) {
        mode_ = Mode::kWrappedFrame; // y4m: the muxer reads the planes where they lie
    } else if (codec.empty() || codec == "rawvideo") {
        if (of->video_codec == AV_CODEC_ID_NONE || !muxer_takes(of, AV_CODEC_ID_RAWVIDEO)) {
            throw UserError(fmt::format("-o {}: the {} format cannot hold raw video: {}", path, of->name, suggestion));
        }
        mode_ = Mode::kRawPacket;
    } else {
        encoder_ = avcodec_find_encoder_by_name(codec.c_str());
        if (encoder_ == nullptr || encoder_->type != AVMEDIA_TYPE_VIDEO) {
            throw UserError(fmt::format("--codec {}: this FFmpeg has no video encoder of that name: `ffmpeg "
                                        "-encoders` lists them (e.g. libx264, ffv1, mjpeg)",
                                        codec));
        }
        if (!muxer_takes(of, encoder_->id)) {
            throw UserError(fmt::format("-o {}: the {} format cannot hold {}: choose another --codec or file type "
                                        "(.mkv and .nut take most)",
                                        path, of->name, encoder_->name));
        }
        mode_ = Mode::kEncode;
    }
    if (!(of->flags & AVFMT_NOFILE)) {
        // Now, not at the first frame: a bad folder is told before any connection.
        if (const int rc = avio_open(&out_->pb, path.c_str(), AVIO_FLAG_WRITE); rc < 0) {
            throw UserError(fmt::format("cannot write -o {}: {}: check the folder exists and is writable", path,
                                        av_error_text(rc)));
        }
    }
}

OutputSink::~OutputSink() {
    // The encoder may still reference slots; its callbacks use tickets_ and
    // released_, so it goes before them.
    av_frame_unref(frame_.get());
    enc_.reset();
}

// The first video flow of the programme (the file holds one picture
// stream) and every audio flow, where the file type holds them.
bool OutputSink::takes(const StreamLayout& stream) {
    const std::uint8_t flow = stream.layout.format().flow;
    if (!(programme_ & (1u << flow))) return false; // announced after the first frame: the header is written
    if (stream.audio) return holds_audio(stream.audio_caps);
    if (mode_ == Mode::kAudioOnly || video_flow_ >= 0) return false;
    video_flow_ = flow;
    return true;
}

void OutputSink::start_format(const StreamLayout& stream) {
    if (stream.audio) {
        start_audio(audio_[stream.layout.format().flow], stream);
    } else {
        start_video(stream);
    }
}

void OutputSink::start_video(const StreamLayout& stream) {
    const RawVideoCaps& caps = stream.caps;
    if (stream_ != nullptr &&
        (caps.format != caps_.format || caps.width != caps_.width || caps.height != caps_.height)) {
        throw std::runtime_error(fmt::format("-o {}: the picture changed mid-stream from {}x{} {} to {}x{} {}, and "
                                             "a file holds one picture size: use --framemd5 or --gst for such "
                                             "streams, or scale on the sending side",
                                             path_, caps_.width, caps_.height, pix_name(caps_.format), caps.width,
                                             caps.height, pix_name(caps.format)));
    }
    geometry_ = stream.geometry;
    layout_ = &stream;
    // Packed: each plane's rows back to back, planes in order, no padding;
    // then the slot already is the rawvideo packet.
    packed_ = true;
    std::size_t packed_offset = stream.layout.plane(0).offset;
    for (int i = 0; i < geometry_.plane_count; ++i) {
        const PlaneGeometry& g = geometry_.planes[static_cast<std::size_t>(i)];
        const gst::PlaneExtent& p = stream.layout.plane(static_cast<unsigned>(i));
        packed_ = packed_ && p.stride == g.row_bytes && p.offset == packed_offset;
        packed_offset += g.row_bytes * static_cast<std::size_t>(g.rows);
    }
    if (stream_ != nullptr) return; // the same picture in a new layout
    caps_ = caps;
    if (caps.framerate.num > 0 && caps.framerate.den > 0) time_base_ = av_inv_q(caps.framerate);
    if (mode_ == Mode::kRawPacket) packed_copy_.resize(geometry_.packed_size); // once, not per frame
    open_stream(caps);
}

void OutputSink::open_stream(const RawVideoCaps& caps) {
    stream_ = avformat_new_stream(out_.get(), nullptr);
    if (stream_ == nullptr) throw std::bad_alloc();
    stream_->time_base = time_base_;
    if (caps.framerate.num > 0) stream_->avg_frame_rate = stream_->r_frame_rate = caps.framerate;
    if (caps.pixel_aspect_ratio.num > 0) stream_->sample_aspect_ratio = caps.pixel_aspect_ratio;
    AVCodecParameters* par = stream_->codecpar;
    if (mode_ == Mode::kEncode) {
        open_encoder(caps);
        check_av(avcodec_parameters_from_context(par, enc_.get()), "avcodec_parameters_from_context", path_);
    } else {
        par->codec_type = AVMEDIA_TYPE_VIDEO;
        par->codec_id = mode_ == Mode::kWrappedFrame ? AV_CODEC_ID_WRAPPED_AVFRAME : AV_CODEC_ID_RAWVIDEO;
        // What FFmpeg's rawvideo encoder would set: muxers that store a
        // FourCC (nut, avi, mkv) name the pixel format by it.
        if (mode_ == Mode::kRawPacket) par->codec_tag = avcodec_pix_fmt_to_codec_tag(caps.format);
        par->format = caps.format;
        par->width = caps.width;
        par->height = caps.height;
        par->sample_aspect_ratio = stream_->sample_aspect_ratio;
        par->field_order = caps.interlaced ? AV_FIELD_TT : AV_FIELD_PROGRESSIVE;
    }
}

// What the file holds, for messages: "320x240 yuv420p rawvideo, pcm_f32le 48000 Hz 2 channels".
std::string OutputSink::describe_streams() const {
    std::string out;
    for (unsigned i = 0; i < out_->nb_streams; ++i) {
        const AVCodecParameters* par = out_->streams[i]->codecpar;
        out += out.empty() ? "" : ", ";
        if (par->codec_type == AVMEDIA_TYPE_VIDEO) {
            out += fmt::format("{}x{} {} {}", par->width, par->height,
                               pix_name(static_cast<AVPixelFormat>(par->format)), avcodec_get_name(par->codec_id));
        } else {
            out += fmt::format("{} {} Hz {} channels", avcodec_get_name(par->codec_id), par->sample_rate,
                               par->ch_layout.nb_channels);
        }
    }
    return out;
}

void OutputSink::programme_ready() {
    if (out_->nb_streams == 0) {
        throw UserError(fmt::format("-o {}: the {} format holds {}, and the sender sends none: write .mkv or .nut, "
                                    "which hold video and audio",
                                    path_, out_->oformat->name, mode_ == Mode::kAudioOnly ? "audio" : "video"));
    }
    if (const int rc = avformat_write_header(out_.get(), nullptr); rc < 0) {
        throw UserError(fmt::format("-o {}: the {} format refused {} ({}): choose another file type or --codec, or "
                                    "convert on the sending side (rdmasend --pix-fmt)",
                                    path_, out_->oformat->name, describe_streams(), av_error_text(rc)));
    }
    header_written_ = true;
}

void OutputSink::open_encoder(const RawVideoCaps& caps) {
    if (encoder_->pix_fmts != nullptr) {
        bool takes = false;
        std::string list;
        for (const AVPixelFormat* f = encoder_->pix_fmts; *f != AV_PIX_FMT_NONE; ++f) {
            takes = takes || *f == caps.format;
            list += fmt::format("{}{}", list.empty() ? "" : ", ", pix_name(*f));
        }
        if (!takes) {
            throw UserError(fmt::format("--codec {} takes no {} frames (it takes {}): have the sender convert, e.g. "
                                        "rdmasend ... --pix-fmt {}",
                                        encoder_->name, pix_name(caps.format), list,
                                        pix_name(encoder_->pix_fmts[0])));
        }
    }
    enc_.reset(avcodec_alloc_context3(encoder_));
    if (!enc_) throw std::bad_alloc();
    enc_->width = caps.width;
    enc_->height = caps.height;
    enc_->pix_fmt = caps.format;
    enc_->time_base = time_base_;
    if (caps.framerate.num > 0) enc_->framerate = caps.framerate;
    if (caps.pixel_aspect_ratio.num > 0) enc_->sample_aspect_ratio = caps.pixel_aspect_ratio;
    if (encoder_->id == AV_CODEC_ID_MJPEG) {
        // What arrives is limited-range YUV; the JPEG stores it marked as
        // such, which FFmpeg calls unofficial but decodes back unchanged.
        enc_->strict_std_compliance = FF_COMPLIANCE_UNOFFICIAL;
    }
    if (out_->oformat->flags & AVFMT_GLOBALHEADER) enc_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (const int rc = avcodec_open2(enc_.get(), encoder_, nullptr); rc < 0) {
        throw UserError(fmt::format("--codec {}: cannot encode a {}x{} {} stream ({}): choose another codec, or "
                                    "convert on the sending side (rdmasend --pix-fmt); -v shows FFmpeg's reason",
                                    encoder_->name, caps.width, caps.height, pix_name(caps.format), av_error_text(rc)));
    }
}

void OutputSink::finish() {
    if (!header_written_) {
        std::fprintf(stderr, "rdmarecv: -o %s: no frame arrived, nothing written\n", path_.c_str());
        return;
    }
    if (mode_ == Mode::kEncode) {
        check_av(avcodec_send_frame(enc_.get(), nullptr), "avcodec_send_frame(flush)", path_);
        write_encoded_packets();
        enc_.reset(); // some encoders (ffv1) keep their last input until closed: its slot comes back now
    }
    check_av(av_write_trailer(out_.get()), "av_write_trailer", path_);
    if (out_->pb != nullptr && !(out_->oformat->flags & AVFMT_NOFILE)) {
        check_av(avio_closep(&out_->pb), "avio_close", path_); // the last write's error shows here
    }
}

} // namespace rdmastream::cli
