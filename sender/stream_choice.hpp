// SPDX-License-Identifier: LGPL-2.1-or-later
// Which streams of the input rdmasend sends, each as one flow of the
// stream, in this order: by default FFmpeg's best video stream (or the Nth,
// --stream N) and its best audio stream (unless --no-audio), as `ffmpeg`
// picks them; with --map, the streams each FFmpeg stream specifier names
// (0:a:0, 0:v:1, 0:1, 0:a:m:language:eng ...; the syntax of ffmpeg's -map,
// matched by avformat_match_stream_specifier), in the order of the --map
// options and, within one, of the input.
#pragma once

#include <string>
#include <vector>

struct AVFormatContext;

namespace rdmastream::cli {

// Checks what can be checked of a --map value without the input: it names
// input 0 ("0" or "0:SPEC"). Throws UserError otherwise.
void check_map_syntax(const std::string& map);

struct StreamChoice {
    std::vector<std::string> maps; // --map, in order; empty: the defaults
    int video_index = -1;          // --stream: the Nth video stream; -1: the best
    bool audio = true;             // without --map: the best audio stream too
    std::string audio_left_out_by; // the flag that turned `audio` off, said if the input has audio
};

// The indices in `input` of the streams to send, one per flow (at most
// kMaxFlows). Throws UserError, naming `url` and the fix, for a specifier
// FFmpeg cannot read, one that matches no stream, a stream named twice or
// that is neither video nor audio, too many streams, or no (decodable)
// stream at all. Says on stderr when the best audio stream has no decoder
// here (the video goes alone).
std::vector<int> choose_streams(AVFormatContext* input, const StreamChoice& choice, const std::string& url);

} // namespace rdmastream::cli
