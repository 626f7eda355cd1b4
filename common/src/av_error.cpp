// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/av_error.hpp"
#include "rdmastream_cli/ff_ptr.hpp"

#include <fmt/format.h>

#include <array>
#include <new>

namespace rdmastream::cli {

std::string av_error_text(int err) {
    std::array<char, AV_ERROR_MAX_STRING_SIZE> buf{};
    av_strerror(err, buf.data(), buf.size());
    return buf.data();
}

MediaError::MediaError(const std::string& call, int err, const std::string& context)
    : std::runtime_error(fmt::format("{}: {} failed: {}", context, call, av_error_text(err))), err_(err) {}

int check_av(int rc, const char* call, const std::string& context) {
    if (rc < 0) {
        throw MediaError(call, rc, context);
    }
    return rc;
}

FramePtr make_frame() {
    FramePtr f(av_frame_alloc());
    if (!f) throw std::bad_alloc();
    return f;
}

PacketPtr make_packet() {
    PacketPtr p(av_packet_alloc());
    if (!p) throw std::bad_alloc();
    return p;
}

} // namespace rdmastream::cli
