// SPDX-License-Identifier: LGPL-2.1-or-later
// Which stream of the input rdmasend sends: FFmpeg's best video stream by
// default, the Nth video stream (--stream N), or the one stream an FFmpeg
// stream specifier names (--map 0:a:0, 0:v:1, 0:1, 0:a:m:language:eng ...;
// the syntax of ffmpeg's -map, matched by avformat_match_stream_specifier).
#pragma once

#include <string>

struct AVFormatContext;

namespace rdmastream::cli {

// Checks what can be checked of a --map value without the input: it names
// input 0 ("0" or "0:SPEC"). Throws UserError otherwise.
void check_map_syntax(const std::string& map);

// The index in `input` of the stream to send. `map` empty: `video_index`
// (-1: the best video stream). Throws UserError, naming `url` and the fix,
// for a specifier FFmpeg cannot read, no stream or more than one matching
// it, no (decodable) video stream, or a stream that is neither video nor
// audio.
int choose_stream(AVFormatContext* input, const std::string& map, int video_index, const std::string& url);

} // namespace rdmastream::cli
