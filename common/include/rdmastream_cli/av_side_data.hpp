// SPDX-License-Identifier: LGPL-2.1-or-later
// FFmpeg's frame side data <-> the transport's per-frame data
// (rdmastream/side_data.hpp): A53 captions, SMPTE 12M timecode, HDR
// mastering display and content light level. Sending, the captions travel as
// FFmpeg holds them (no copy here; the transport copies them at send()) and
// the others are packed into this object's own buffers: nothing is
// allocated per frame. Receiving, they become the AVFrame's side data again,
// for an encoder that writes them (libx264 and libx265 write captions).
#pragma once

#include "rdmastream/side_data.hpp"

#include <array>
#include <cstddef>
#include <span>

extern "C" {
#include <libavutil/frame.h>
}

namespace rdmastream::cli {

class AvSideData {
public:
    // The entries of `picture`, valid until the next call or until the
    // picture's side data goes; within kDefaultSideDataBytes together. Entries the transport would refuse (a
    // caption block that is not whole triplets, a timecode count outside
    // 1..3, mastering metadata without primaries or luminance) are left out,
    // each kind with one warning on stderr.
    std::span<const SideData> of(const AVFrame& picture);


    // The entries as `frame`'s side data (added to what it has; FFmpeg
    // allocates each). Throws std::bad_alloc when FFmpeg cannot.
    static void attach(std::span<const SideData> entries, AVFrame* frame);

private:
    void warn_once(SideDataKind kind, const char* why);

    std::array<SideData, kMaxSideDataEntries> entries_{};
    std::array<std::byte, 12> timecode_{};
    std::array<std::byte, 24> mastering_{};
    std::array<std::byte, 4> light_{};
    unsigned warned_ = 0; // bit per kind
};

} // namespace rdmastream::cli
