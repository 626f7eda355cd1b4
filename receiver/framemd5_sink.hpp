// SPDX-License-Identifier: LGPL-2.1-or-later
// --framemd5 FILE: one MD5 per frame, in exactly the format of
// `ffmpeg -i INPUT -f framemd5 -` (libavformat's hashenc.c, version 2), so
// the two can be compared byte for byte. The hash covers each plane's
// visible bytes row by row (what FFmpeg's rawvideo packet holds), read in
// place from the ring slot: no copy.
#pragma once

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
};

} // namespace rdmastream::cli
