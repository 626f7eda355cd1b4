// SPDX-License-Identifier: LGPL-2.1-or-later
// --framemd5 FILE: one MD5 per frame of every flow, in exactly the format of
// `ffmpeg -i INPUT -map 0:v:0 -map 0:a:0 -f framemd5 -` (libavformat's
// hashenc.c, version 2), so the two can be compared byte for byte. Each
// flow is one stream of the file, numbered in flow order.
//
// Video: the hash covers each plane's visible bytes row by row (what
// FFmpeg's rawvideo packet holds), read in place from the ring slot: no
// copy. Audio: ffmpeg's framemd5 encodes audio as pcm_s16le, so it hashes
// each decoded frame converted to interleaved S16 by libswresample (what
// its aresample filter does); so does this sink (audio_convert.hpp), one
// conversion into a buffer sized once per format. Timestamps and durations
// are in samples (time base 1/rate), as ffmpeg's are.
//
// The header lists every stream: the programme's flows (those announced
// before the first frame); a flow announced later is not written (takes()
// says no). The lines
// follow libavformat's interleaving (ff_interleave_packet_per_dts): a
// line waits until every stream has one waiting, then the earliest goes
// (by timestamp, the lower stream first on a tie); at the end the rest, in
// the same order. With one flow, each line is written as its frame comes.
#pragma once

#include "audio_convert.hpp"
#include "frame_sink.hpp"

#include "rdmastream/format.hpp"

extern "C" {
#include <libavutil/md5.h>
#include <libavutil/mem.h>
}

#include <array>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

namespace rdmastream::cli {

class FrameMd5Sink final : public FrameSink {
public:
    // `path` "-": stdout.
    explicit FrameMd5Sink(const std::string& path);
    void start_programme(std::uint16_t flows) override;
    bool takes(const StreamLayout& stream) override;
    void start_format(const StreamLayout& stream) override;
    void programme_ready() override;
    bool consume(const ReceivedFrame& frame) override;
    void finish() override;

private:
    // One line, held until libavformat's interleaving would write it.
    struct Line {
        std::int64_t pts = 0;
        std::array<char, 112> text{};
    };
    // A flow as one stream of the file.
    struct Stream {
        int index = -1;                        // its number in the file; -1: not in it
        const StreamLayout* layout = nullptr;  // the current format's; null until the first
        AVRational time_base{1, 25};
        bool audio = false; // the header written was audio's (a stream holds one kind)
        AudioConverter s16; // audio: to pcm_s16le, as ffmpeg's framemd5 hashes it
        std::deque<Line> lines;
    };

    void write_stream_header(const Stream& s);
    void hash_video(const Stream& s, const ReceivedFrame& frame);
    void hash_audio(Stream& s, const ReceivedFrame& frame);
    void queue_line(Stream& s, std::int64_t pts, std::int64_t duration, int size);
    // Writes lines in interleaved order: while every stream has one
    // waiting, or (`all`) until none is left.
    void write_lines(bool all);

    struct FileCloser {
        void operator()(std::FILE* f) const noexcept {
            if (f != stdout) std::fclose(f);
        }
    };
    struct Md5Deleter {
        void operator()(AVMD5* m) const noexcept { av_free(m); }
    };

    std::string path_;
    std::unique_ptr<std::FILE, FileCloser> out_;
    std::unique_ptr<AVMD5, Md5Deleter> md5_;
    std::array<Stream, kMaxFlows> streams_;
    int stream_count_ = 0;
};

} // namespace rdmastream::cli
