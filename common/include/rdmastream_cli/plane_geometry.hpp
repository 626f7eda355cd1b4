// SPDX-License-Identifier: LGPL-2.1-or-later
// Which bytes of a raw video frame are picture: per plane, the bytes of one
// visible row and the number of rows. Strides (padding) are not picture;
// checksums and muxers see exactly these bytes, as FFmpeg's rawvideo
// encoder packs them (av_image_copy_to_buffer, alignment 1).
#pragma once

extern "C" {
#include <libavutil/pixfmt.h>
}

#include "rdmastream/format.hpp"

#include <array>
#include <cstddef>

namespace rdmastream::cli {

struct PlaneGeometry {
    std::size_t row_bytes = 0;
    int rows = 0;
};

struct FrameGeometry {
    std::array<PlaneGeometry, 4> planes{};
    int plane_count = 0;
    std::size_t packed_size = 0; // sum of row_bytes * rows: the rawvideo packet size
};

// Throws UserError for palette and hardware formats (no planes to describe).
FrameGeometry frame_geometry(AVPixelFormat format, int width, int height);

} // namespace rdmastream::cli
