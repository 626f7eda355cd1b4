// SPDX-License-Identifier: LGPL-2.1-or-later
#include "wire/work_id.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace rdmastream {

WorkId decode_work_id(std::uint64_t wr_id) {
    const auto kind = static_cast<std::uint8_t>(wr_id >> kWorkIndexBits);
    if (kind < static_cast<std::uint8_t>(Work::kFrameWrite) || kind > static_cast<std::uint8_t>(Work::kDrainMarker)) {
        throw std::logic_error(fmt::format("a completion with wr_id {:#x}, which no work request of ours carries",
                                           wr_id));
    }
    return WorkId{static_cast<Work>(kind), wr_id & kWorkIndexMask};
}

} // namespace rdmastream
