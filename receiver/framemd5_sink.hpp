// SPDX-License-Identifier: LGPL-2.1-or-later
// --framemd5 FILE: one MD5 per frame, in exactly the format of
// `ffmpeg -i INPUT -f framemd5 -` (libavformat's hashenc.c, version 2), so
// the two can be compared byte for byte. The hash covers each plane's
// visible bytes row by row (what FFmpeg's rawvideo packet holds), read in
// place from the ring slot: no copy.
//
// Audio: ffmpeg's framemd5 encodes audio as pcm_s16le, so it hashes each
// decoded frame converted to interleaved S16 by libswresample (what its
// aresample filter does); so does this sink (audio_convert.hpp), one
// conversion into a buffer sized once per format. Timestamps and durations
// are in samples (time base 1/rate), as ffmpeg's are.
#pragma once

#include "audio_convert.hpp"
#include "frame_sink.hpp"

#include "rdmastream_cli/plane_geometry.hpp"

extern "C" {
#include <libavutil/md5.h>
#include <libavutil/mem.h>
}

#include <cstdio>
#include <memory>
#include <string>

namespace rdmastream::cli {

class FrameMd5Sink final : public FrameSink {
public:
    // `path` "-": stdout.
    explicit FrameMd5Sink(const std::string& path);
    void start_format(const StreamLayout& stream) override;
    bool consume(const ReceivedFrame& frame) override;
    void finish() override;

private:
    void write_audio_header(const RawAudioCaps& caps);
    void hash_audio(const ReceivedFrame& frame);
    void write_line(std::int64_t pts, std::int64_t duration, int size);

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
    bool header_written_ = false;
    AVRational time_base_{1, 25};
    const StreamLayout* stream_ = nullptr; // the current format's
    bool audio_ = false;                   // the header written was audio's (a file holds one kind)
    AudioConverter s16_;                   // audio: to pcm_s16le, as ffmpeg's framemd5 hashes it
};

} // namespace rdmastream::cli
