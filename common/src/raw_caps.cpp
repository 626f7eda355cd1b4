// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_cli/pixel_formats.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <charconv>
#include <string_view>
#include <vector>

namespace rdmastream::cli {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

// A decimal integer as GStreamer reads it. GStreamer takes C's notation
// (strtoull base 0: "063" is octal 51, "0x3f" hex, and words like "max"),
// so anything but plain decimal is refused rather than read differently.
int to_int(std::string_view v, const std::string& caps) {
    const std::string_view digits = !v.empty() && v.front() == '-' ? v.substr(1) : v;
    int out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc{} || end != v.data() + v.size() || (digits.size() > 1 && digits.front() == '0')) {
        throw ProtocolError(fmt::format("caps '{}': '{}' is not a decimal integer", caps, v));
    }
    return out;
}

// A fraction (or an integer n, read as n/1) with a positive denominator:
// FFmpeg's time bases and aspect ratios take no other.
AVRational to_fraction(std::string_view v, const std::string& caps) {
    const auto slash = v.find('/');
    if (slash == std::string_view::npos) return AVRational{to_int(v, caps), 1};
    const AVRational r{to_int(v.substr(0, slash), caps), to_int(v.substr(slash + 1), caps)};
    if (r.den <= 0) {
        throw ProtocolError(fmt::format("caps '{}': '{}' is not a fraction with a positive denominator", caps, v));
    }
    return r;
}

// The fields of a GStreamer structure string after its name, split where
// GStreamer splits them: at commas outside quoted strings ("...", with
// backslash escapes) and outside brackets ((), [], {}, <>), so that text
// inside a value (a string, a list, a nested structure) is never read as a
// field. Refuses a second structure (';' then more: the caps are not fixed)
// and unbalanced quotes or brackets.
std::vector<std::string_view> split_fields(std::string_view rest, const std::string& caps) {
    std::vector<std::string_view> fields;
    std::string depth; // the closing brackets still expected, innermost last
    bool quoted = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < rest.size(); ++i) {
        const char c = rest[i];
        if (quoted) {
            if (c == '\\') {
                ++i; // the escaped character, whatever it is
            } else if (c == '"') {
                quoted = false;
            }
            continue;
        }
        switch (c) {
        case '"': quoted = true; break;
        case '(': depth.push_back(')'); break;
        case '[': depth.push_back(']'); break;
        case '{': depth.push_back('}'); break;
        case '<': depth.push_back('>'); break;
        case ')':
        case ']':
        case '}':
        case '>':
            if (depth.empty() || depth.back() != c) {
                throw ProtocolError(fmt::format("caps '{}': unbalanced '{}'", caps, c));
            }
            depth.pop_back();
            break;
        case ',':
        case ';':
            if (!depth.empty()) break;
            fields.push_back(rest.substr(start, i - start));
            start = i + 1;
            if (c == ';') {
                if (!trim(rest.substr(start)).empty()) {
                    throw ProtocolError(fmt::format("caps '{}' hold more than one structure: they are not fixed", caps));
                }
                return fields;
            }
            break;
        default: break;
        }
    }
    if (quoted || !depth.empty()) {
        throw ProtocolError(fmt::format("caps '{}': an unterminated {}", caps, quoted ? "string" : "bracket"));
    }
    fields.push_back(rest.substr(start));
    return fields;
}

} // namespace

std::string to_caps_string(const RawVideoCaps& c) {
    const auto name = gst_format_name(c.format);
    if (!name) {
        const char* av = av_get_pix_fmt_name(c.format);
        throw UserError(fmt::format("pixel format {} has no GStreamer equivalent to announce: convert with "
                                    "--pix-fmt (e.g. --pix-fmt yuv420p or --pix-fmt rgb24)",
                                    av ? av : "none"));
    }
    std::string s = fmt::format("video/x-raw,format={},width={},height={},framerate={}/{}", *name, c.width, c.height,
                                c.framerate.num, c.framerate.den);
    if (c.pixel_aspect_ratio.num > 0 && c.pixel_aspect_ratio.den > 0) {
        s += fmt::format(",pixel-aspect-ratio={}/{}", c.pixel_aspect_ratio.num, c.pixel_aspect_ratio.den);
    }
    if (c.interlaced) {
        s += ",interlace-mode=interleaved";
    }
    return s;
}

RawVideoCaps parse_caps_string(const std::string& caps) {
    const std::string_view all(caps);
    const auto first = all.find_first_of(",;");
    if (trim(all.substr(0, first)) != "video/x-raw") {
        throw ProtocolError(fmt::format("the sender's caps '{}' are not raw video (video/x-raw): rdmarecv "
                                        "writes raw frames only",
                                        caps));
    }
    RawVideoCaps out;
    const std::string_view rest = first == std::string_view::npos ? std::string_view{} : all.substr(first);
    for (const std::string_view raw_field : split_fields(rest, caps)) {
        const std::string_view field = trim(raw_field);
        const auto eq = field.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string_view key = trim(field.substr(0, eq));
        std::string_view value = trim(field.substr(eq + 1));
        if (!value.empty() && value.front() == '(') { // "(int)320": the type is implied by the key
            value = trim(value.substr(value.find(')') + 1));
        }
        if (key == "format") {
            out.format = av_pixel_format(value);
            if (out.format == AV_PIX_FMT_NONE) {
                throw ProtocolError(fmt::format("caps '{}': rdmarecv has no FFmpeg pixel format for GStreamer "
                                                "format {}",
                                                caps, value));
            }
        } else if (key == "width") {
            out.width = to_int(value, caps);
        } else if (key == "height") {
            out.height = to_int(value, caps);
        } else if (key == "framerate") {
            out.framerate = to_fraction(value, caps);
        } else if (key == "pixel-aspect-ratio") {
            out.pixel_aspect_ratio = to_fraction(value, caps);
        } else if (key == "interlace-mode") {
            out.interlaced = value != "progressive";
        }
    }
    if (out.format == AV_PIX_FMT_NONE || out.width <= 0 || out.height <= 0) {
        throw ProtocolError(fmt::format("caps '{}' lack a format, width or height", caps));
    }
    return out;
}

} // namespace rdmastream::cli
