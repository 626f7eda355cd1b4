// SPDX-License-Identifier: LGPL-2.1-or-later
// OutputSink's audio: the PCM stream (codec by sample format), and one
// packet per frame: the slot itself when the samples are interleaved, else
// the frame interleaved into a buffer sized once per format (counted copy).
#include "output_sink.hpp"
#include "rdmastream_cli/av_time.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/no_time.hpp"

#include <fmt/format.h>

namespace rdmastream::cli {
namespace {


// The lossless codec that stores `format`'s samples as they are.
AVCodecID pcm_codec(AVSampleFormat format) noexcept {
    switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8: return AV_CODEC_ID_PCM_U8;
    case AV_SAMPLE_FMT_S16: return AV_CODEC_ID_PCM_S16LE;
    case AV_SAMPLE_FMT_S32: return AV_CODEC_ID_PCM_S32LE;
    case AV_SAMPLE_FMT_FLT: return AV_CODEC_ID_PCM_F32LE;
    case AV_SAMPLE_FMT_DBL: return AV_CODEC_ID_PCM_F64LE;
    default: return AV_CODEC_ID_NONE;
    }
}

} // namespace

// Whether the file type takes these samples as PCM (.y4m holds no audio,
// .mp4 no such PCM: the pictures go alone, and the session says so).
bool OutputSink::holds_audio(const RawAudioCaps& caps) const {
    return out_->oformat->audio_codec != AV_CODEC_ID_NONE &&
           avformat_query_codec(out_->oformat, pcm_codec(caps.format), FF_COMPLIANCE_NORMAL) != 0;
}

void OutputSink::start_audio(AudioStream& a, const StreamLayout& stream) {
    const RawAudioCaps& caps = stream.audio_caps;
    if (a.stream != nullptr &&
        (av_get_packed_sample_fmt(caps.format) != av_get_packed_sample_fmt(a.caps.format) ||
         caps.rate != a.caps.rate || caps.channels != a.caps.channels)) {
        throw std::runtime_error(fmt::format("-o {}: flow {} changed mid-stream to {}, and a file's stream holds one "
                                             "kind of samples: use --framemd5 or --gst for such streams",
                                             path_, stream.layout.format().flow, stream.layout.format().caps));
    }
    a.layout = &stream;
    if (av_sample_fmt_is_planar(caps.format)) { // sized once per format: the largest frame, interleaved
        a.interleave.configure(caps, av_get_packed_sample_fmt(caps.format), stream.layout.format().max_frame_size,
                               "-o " + path_);
    }
    if (a.stream != nullptr) return; // the same samples, maybe now planar: the file goes on
    a.caps = caps;
    const AVCodecID id = pcm_codec(caps.format);
    if (avformat_query_codec(out_->oformat, id, FF_COMPLIANCE_NORMAL) == 0) {
        throw UserError(fmt::format("-o {}: the {} format cannot hold {} audio: write .wav, .mkv or .nut", path_,
                                    out_->oformat->name, avcodec_get_name(id)));
    }
    a.time_base = AVRational{1, caps.rate};
    a.stream = avformat_new_stream(out_.get(), nullptr);
    if (a.stream == nullptr) throw std::bad_alloc();
    a.stream->time_base = a.time_base;
    AVCodecParameters* par = a.stream->codecpar;
    par->codec_type = AVMEDIA_TYPE_AUDIO;
    par->codec_id = id;
    par->format = av_get_packed_sample_fmt(caps.format);
    par->sample_rate = caps.rate;
    AVChannelLayout layout = av_channel_layout(caps.channel_mask, caps.channels);
    const int rc = av_channel_layout_copy(&par->ch_layout, &layout);
    av_channel_layout_uninit(&layout);
    check_av(rc, "av_channel_layout_copy", path_);
    // What FFmpeg's PCM encoders set.
    par->bits_per_coded_sample = av_get_bits_per_sample(id);
    par->block_align = sample_frame_bytes(caps);
    par->bit_rate = std::int64_t{caps.rate} * par->block_align * 8;
}

// A packet without a buffer reference is written synchronously by
// av_write_frame, so the slot (or the interleaving buffer) is free again
// when it returns.
bool OutputSink::write_audio(AudioStream& a, const ReceivedFrame& frame) {
    const int samples = a.layout->samples(frame.payload.size());
    const std::int64_t pts =
        frame.header.pts == kNoTime ? a.next_pts : av_rescale_q(frame.header.pts, kNanoseconds, a.time_base);
    a.next_pts = pts + samples;
    if (av_sample_fmt_is_planar(a.layout->audio_caps.format)) {
        const std::span<const std::uint8_t> packed = a.interleave.convert(frame.payload);
        packet_->data = const_cast<std::uint8_t*>(packed.data());
        packet_->size = static_cast<int>(packed.size());
        ++frames_copied_[frame.header.flow];
    } else {
        // The ring is read-only to us; FFmpeg's packet has no const data.
        packet_->data = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(frame.payload.data()));
        packet_->size = static_cast<int>(frame.payload.size());
    }
    write_packet(a.stream, a.time_base, pts, samples);
    return true;
}

} // namespace rdmastream::cli
