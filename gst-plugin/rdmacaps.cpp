// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmacaps.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/side_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>

namespace rdmastream::gst {

bool PlaneSet::operator==(const PlaneSet& other) const noexcept {
    if (count != other.count) {
        return false;
    }
    for (std::size_t i = 0; i < count; ++i) {
        if (planes[i].offset != other.planes[i].offset || planes[i].stride != other.planes[i].stride) {
            return false;
        }
    }
    return true;
}

PlaneSet planes_of(const GstVideoInfo& info) {
    PlaneSet p;
    p.count = static_cast<std::uint8_t>(GST_VIDEO_INFO_N_PLANES(&info));
    for (std::size_t i = 0; i < p.count && i < kMaxPlanes; ++i) {
        p.planes[i] = {static_cast<std::uint32_t>(info.offset[i]), static_cast<std::uint32_t>(info.stride[i])};
    }
    return p;
}

PlaneSet planes_of(const GstVideoMeta& meta) {
    PlaneSet p;
    p.count = static_cast<std::uint8_t>(meta.n_planes);
    for (std::size_t i = 0; i < p.count && i < kMaxPlanes; ++i) {
        p.planes[i] = {static_cast<std::uint32_t>(meta.offset[i]), static_cast<std::uint32_t>(meta.stride[i])};
    }
    return p;
}

StreamFormat stream_format(const std::string& caps, const PlaneSet& planes, std::uint32_t max_frame_size,
                                 std::uint16_t id) {
    if (caps.size() > kMaxCapsLength) {
        throw UserError(fmt::format("the caps are {} characters long, the wire carries at most {}: drop fields "
                                    "such as streamheader or codec_data upstream (e.g. send a byte-stream)",
                                    caps.size(), kMaxCapsLength));
    }
    StreamFormat f;
    f.id = id;
    f.max_frame_size = max_frame_size;
    // Room for each frame's side data (rdmasink_sidedata.hpp): the default
    // senders declare, or what is left of the largest slot past the frame.
    const std::uint64_t room = kMaxSlotBytes - kSlotHeaderBytes;
    const std::uint64_t left = room - std::min<std::uint64_t>(max_frame_size, room);
    f.max_side_data = static_cast<std::uint32_t>(std::min<std::uint64_t>(kDefaultSideDataBytes, left));
    f.planes = planes.planes;
    f.plane_count = planes.count;
    f.caps = caps;
    return f;
}

std::uint32_t opaque_frame_budget(std::size_t size) {
    const std::size_t budget = std::bit_ceil(std::max<std::size_t>(size, 64 * 1024));
    if (budget > kMaxSlotBytes) {
        throw UserError(fmt::format("a {}-byte frame is larger than any ring slot can be", size));
    }
    return static_cast<std::uint32_t>(budget);
}

} // namespace rdmastream::gst
