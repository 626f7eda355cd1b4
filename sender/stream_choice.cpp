// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream_choice.hpp"

#include "rdmastream_cli/av_error.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/format.hpp"

extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace rdmastream::cli {
namespace {

// The part after "0:", or empty for "0" (every stream).
std::string spec_of(const std::string& map) { return map.size() > 2 ? map.substr(2) : std::string(); }

std::string list_streams(const AVFormatContext* input) {
    std::string out;
    for (unsigned i = 0; i < input->nb_streams; ++i) {
        const AVCodecParameters* par = input->streams[i]->codecpar;
        const char* type = av_get_media_type_string(par->codec_type);
        out += fmt::format("{}0:{} {} {}", out.empty() ? "" : ", ", i, type ? type : "unknown",
                           avcodec_get_name(par->codec_id));
    }
    return out.empty() ? "none" : out;
}

std::vector<int> mapped_streams(AVFormatContext* input, const std::string& map, const std::string& url) {
    const std::string spec = spec_of(map);
    std::vector<int> matches;
    // FFmpeg logs its own line for a bad specifier; ours says more.
    const int level = av_log_get_level();
    av_log_set_level(AV_LOG_QUIET);
    int bad = 0;
    for (unsigned i = 0; i < input->nb_streams && bad == 0; ++i) {
        const int rc = avformat_match_stream_specifier(input, input->streams[i], spec.c_str());
        if (rc < 0) bad = rc;
        if (rc > 0) matches.push_back(static_cast<int>(i));
    }
    av_log_set_level(level);
    if (bad < 0) {
        throw UserError(fmt::format("--map {}: \"{}\" is not an FFmpeg stream specifier ({}): write e.g. 0:a:0 "
                                    "(the first audio stream), 0:v:1 or 0:2",
                                    map, spec, av_error_text(bad)));
    }
    if (matches.empty()) {
        throw UserError(fmt::format("--map {}: no stream of {} matches (it has: {})", map, url, list_streams(input)));
    }
    for (const int i : matches) {
        const AVMediaType type = input->streams[i]->codecpar->codec_type;
        if (type != AVMEDIA_TYPE_VIDEO && type != AVMEDIA_TYPE_AUDIO) {
            const char* name = av_get_media_type_string(type);
            throw UserError(fmt::format("--map {}: stream 0:{} of {} is {}: rdmasend sends video and audio; name "
                                        "the streams to send one by one (it has: {})",
                                        map, i, url, name ? name : "of an unknown type", list_streams(input)));
        }
    }
    return matches;
}

int best_video(AVFormatContext* input, const std::string& url) {
    const int index = av_find_best_stream(input, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (index == AVERROR_STREAM_NOT_FOUND) {
        throw UserError(fmt::format("{} has no video stream: rdmasend sends its best video stream unless --map "
                                    "names another (e.g. --map 0:a:0 for its first audio stream)",
                                    url));
    }
    if (index == AVERROR_DECODER_NOT_FOUND) {
        const AVStream* s = nullptr;
        for (unsigned i = 0; i < input->nb_streams && s == nullptr; ++i) {
            if (input->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) s = input->streams[i];
        }
        throw UserError(fmt::format("{}: no decoder for its video codec {}: this FFmpeg cannot decode it; "
                                    "transcode it first (ffmpeg -i {} -c:v ffv1 out.mkv)",
                                    url, s ? avcodec_get_name(s->codecpar->codec_id) : "unknown", url));
    }
    check_av(index, "av_find_best_stream", url);
    return index;
}

// FFmpeg's best audio stream, as `ffmpeg` picks it (related to the video
// stream, when there is one); -1 when there is none, or none this FFmpeg
// decodes (said, and the video goes alone).
int best_audio(AVFormatContext* input, int video, const std::string& url) {
    const AVCodec* decoder = nullptr; // asked for: streams without a decoder here are passed over
    const int index = av_find_best_stream(input, AVMEDIA_TYPE_AUDIO, -1, video, &decoder, 0);
    if (index == AVERROR_STREAM_NOT_FOUND) return -1;
    if (index == AVERROR_DECODER_NOT_FOUND) {
        std::fprintf(stderr, "rdmasend: %s: no decoder here for its audio codec: sending %s without sound "
                             "(--no-audio says so without this line)\n",
                     url.c_str(), video >= 0 ? "the video" : "nothing");
        return -1;
    }
    check_av(index, "av_find_best_stream", url);
    return index;
}

int nth_video(const AVFormatContext* input, int n, const std::string& url) {
    int seen = 0;
    for (unsigned i = 0; i < input->nb_streams; ++i) {
        if (input->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && seen++ == n) return static_cast<int>(i);
    }
    throw UserError(fmt::format("--stream {}: {} has {} video stream(s), numbered from 0", n, url, seen));
}

} // namespace

void check_map_syntax(const std::string& map) {
    if (map != "0" && !map.starts_with("0:")) {
        throw UserError(fmt::format("--map {}: rdmasend reads one input, input 0: write 0:SPEC, e.g. --map 0:a:0 "
                                    "(its first audio stream) or --map 0:v:0",
                                    map));
    }
}

std::vector<int> choose_streams(AVFormatContext* input, const StreamChoice& choice, const std::string& url) {
    std::vector<int> out;
    if (choice.maps.empty()) {
        const bool has_video = std::any_of(input->streams, input->streams + input->nb_streams,
                                           [](const AVStream* s) { return s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO; });
        // An audio-only input sends its audio, as ffmpeg would.
        const int video = choice.video_index >= 0 ? nth_video(input, choice.video_index, url)
                          : has_video || !choice.audio ? best_video(input, url)
                                                       : -1;
        if (video >= 0) out.push_back(video);
        const int audio = choice.audio || !choice.audio_left_out_by.empty() ? best_audio(input, video, url) : -1;
        if (audio >= 0 && !choice.audio) {
            std::fprintf(stderr, "rdmasend: %s paces the pictures alone: audio stream 0:%d is left out (send it at "
                                 "the stream's own rate with --realtime; --no-audio says so without this line)\n",
                         choice.audio_left_out_by.c_str(), audio);
        } else if (audio >= 0) {
            out.push_back(audio);
        }
        if (out.empty()) {
            throw UserError(fmt::format("{} has no video or audio stream rdmasend can send (it has: {})", url,
                                        list_streams(input)));
        }
        return out;
    }
    for (const std::string& map : choice.maps) {
        for (const int i : mapped_streams(input, map, url)) {
            if (std::find(out.begin(), out.end(), i) != out.end()) {
                throw UserError(fmt::format("--map {}: stream 0:{} is named by an earlier --map too: each stream "
                                            "goes once",
                                            map, i));
            }
            out.push_back(i);
        }
    }
    if (out.size() > kMaxFlows) {
        throw UserError(fmt::format("--map names {} streams, and a stream carries at most {} flows: name fewer",
                                    out.size(), kMaxFlows));
    }
    return out;
}

} // namespace rdmastream::cli
