// SPDX-License-Identifier: LGPL-2.1-or-later
// Test clips with per-frame data, and what a file's frames carry.
//   side_data_clip make OUT.mkv N   N frames of H.264 (libx264, which writes
//                                   each frame's A53 captions as SEI), every
//                                   frame with its own caption bytes
//   side_data_clip dump FILE        one line per decoded frame, in display
//                                   order: its index and the hex of its
//                                   captions, timecode, mastering display and
//                                   content light (what the transport carries)
// FFmpeg's CLI can keep captions but not make them; this makes them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mastering_display_metadata.h>
}

namespace {

[[noreturn]] void die(const char* what, int rc) {
    char buf[256];
    av_strerror(rc, buf, sizeof buf);
    std::fprintf(stderr, "side_data_clip: %s: %s\n", what, buf);
    std::exit(1);
}

void check(int rc, const char* what) {
    if (rc < 0) die(what, rc);
}

void write_packets(AVCodecContext* enc, AVFormatContext* mux, AVStream* st, AVPacket* pkt) {
    for (;;) {
        const int rc = avcodec_receive_packet(enc, pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
        check(rc, "avcodec_receive_packet");
        av_packet_rescale_ts(pkt, enc->time_base, st->time_base);
        pkt->stream_index = st->index;
        check(av_interleaved_write_frame(mux, pkt), "av_interleaved_write_frame");
    }
}

int make(const char* out, int frames) {
    const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
    if (codec == nullptr) die("libx264", AVERROR_ENCODER_NOT_FOUND);
    AVFormatContext* mux = nullptr;
    check(avformat_alloc_output_context2(&mux, nullptr, nullptr, out), "avformat_alloc_output_context2");
    AVCodecContext* enc = avcodec_alloc_context3(codec);
    enc->width = 320;
    enc->height = 240;
    enc->pix_fmt = AV_PIX_FMT_YUV420P;
    enc->time_base = {1, 25};
    enc->framerate = {25, 1};
    if (mux->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    check(avcodec_open2(enc, codec, nullptr), "avcodec_open2");
    AVStream* st = avformat_new_stream(mux, nullptr);
    check(avcodec_parameters_from_context(st->codecpar, enc), "avcodec_parameters_from_context");
    st->time_base = enc->time_base;
    check(avio_open(&mux->pb, out, AVIO_FLAG_WRITE), "avio_open");
    check(avformat_write_header(mux, nullptr), "avformat_write_header");
    AVFrame* f = av_frame_alloc();
    AVPacket* pkt = av_packet_alloc();
    for (int i = 0; i < frames; ++i) {
        f->format = enc->pix_fmt;
        f->width = enc->width;
        f->height = enc->height;
        check(av_frame_get_buffer(f, 0), "av_frame_get_buffer");
        for (int p = 0; p < 3; ++p) {
            const int h = p == 0 ? f->height : f->height / 2;
            std::memset(f->data[p], p == 0 ? 16 + 8 * i : 128, static_cast<std::size_t>(f->linesize[p]) * h);
        }
        // Two cc_data triplets, different in every frame (608 field 1: "A"+i).
        const unsigned char cc[6] = {0xfc, static_cast<unsigned char>(0x41 + i % 26), 0x80, 0xfd, 0x80, 0x80};
        AVFrameSideData* sd = av_frame_new_side_data(f, AV_FRAME_DATA_A53_CC, sizeof cc);
        if (sd == nullptr) die("av_frame_new_side_data", AVERROR(ENOMEM));
        std::memcpy(sd->data, cc, sizeof cc);
        f->pts = i;
        check(avcodec_send_frame(enc, f), "avcodec_send_frame");
        av_frame_unref(f);
        write_packets(enc, mux, st, pkt);
    }
    check(avcodec_send_frame(enc, nullptr), "avcodec_send_frame (flush)");
    write_packets(enc, mux, st, pkt);
    check(av_write_trailer(mux), "av_write_trailer");
    avio_closep(&mux->pb);
    av_frame_free(&f);
    av_packet_free(&pkt);
    avcodec_free_context(&enc);
    avformat_free_context(mux);
    return 0;
}

std::string hex(const AVFrame* f, AVFrameSideDataType type) {
    const AVFrameSideData* sd = av_frame_get_side_data(f, type);
    if (sd == nullptr) return "-";
    std::string s;
    char b[3];
    for (std::size_t i = 0; i < sd->size; ++i) {
        std::snprintf(b, sizeof b, "%02x", sd->data[i]);
        s += b;
    }
    return s;
}

int dump(const char* in) {
    AVFormatContext* demux = nullptr;
    check(avformat_open_input(&demux, in, nullptr, nullptr), in);
    check(avformat_find_stream_info(demux, nullptr), "avformat_find_stream_info");
    const AVCodec* codec = nullptr;
    const int v = av_find_best_stream(demux, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    check(v, "no video stream");
    AVCodecContext* dec = avcodec_alloc_context3(codec);
    check(avcodec_parameters_to_context(dec, demux->streams[v]->codecpar), "avcodec_parameters_to_context");
    check(avcodec_open2(dec, codec, nullptr), "avcodec_open2");
    AVPacket* pkt = av_packet_alloc();
    AVFrame* f = av_frame_alloc();
    std::vector<std::pair<std::int64_t, std::string>> lines;
    const auto drain = [&] {
        while (avcodec_receive_frame(dec, f) == 0) {
            lines.emplace_back(f->best_effort_timestamp,
                               "cc=" + hex(f, AV_FRAME_DATA_A53_CC) + " tc=" + hex(f, AV_FRAME_DATA_S12M_TIMECODE) +
                                   " md=" + hex(f, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA) +
                                   " cll=" + hex(f, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL));
            av_frame_unref(f);
        }
    };
    while (av_read_frame(demux, pkt) >= 0) {
        if (pkt->stream_index == v) {
            check(avcodec_send_packet(dec, pkt), "avcodec_send_packet");
            drain();
        }
        av_packet_unref(pkt);
    }
    avcodec_send_packet(dec, nullptr);
    drain();
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < lines.size(); ++i) std::printf("%zu %s\n", i, lines[i].second.c_str());
    av_frame_free(&f);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&demux);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "make") == 0) return make(argv[2], std::atoi(argv[3]));
    if (argc == 3 && std::strcmp(argv[1], "dump") == 0) return dump(argv[2]);
    std::fprintf(stderr, "usage: side_data_clip make OUT.mkv N | side_data_clip dump FILE\n");
    return 2;
}
