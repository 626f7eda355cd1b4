#include "rdmastream_cli/raw_caps.hpp"
#include "rdmastream_cli/pixel_formats.hpp"

#include "rdmastream/error.hpp"

extern "C" {
#include <libavutil/pixdesc.h>
}

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace rdmastream::cli {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

int to_int(std::string_view v, const std::string& caps) {
    int out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc{} || end != v.data() + v.size()) {
        throw ProtocolError(fmt::format("caps '{}': '{}' is not an integer", caps, v));
    }
    return out;
}

AVRational to_fraction(std::string_view v, const std::string& caps) {
    const auto slash = v.find('/');
    if (slash == std::string_view::npos) return AVRational{to_int(v, caps), 1};
    return AVRational{to_int(v.substr(0, slash), caps), to_int(v.substr(slash + 1), caps)};
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
    std::string_view rest(caps);
    const auto first = rest.find(',');
    if (trim(rest.substr(0, first)) != "video/x-raw") {
        throw ProtocolError(fmt::format("the sender's caps '{}' are not raw video (video/x-raw): rdmarecv "
                                        "writes raw frames only",
                                        caps));
    }
    RawVideoCaps out;
    rest = first == std::string_view::npos ? std::string_view{} : rest.substr(first + 1);
    while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view field = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
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
