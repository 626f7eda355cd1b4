// SPDX-License-Identifier: LGPL-2.1-or-later
// wr_id's encoding: every kind and index comes back as it went, and a value
// no work request of ours carries is refused by name.
#include "wire/work_id.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace rdmastream {
namespace {

TEST(WorkId, EveryKindAndIndexDecodesAsEncoded) {
    for (int k = static_cast<int>(Work::kFrameWrite); k <= static_cast<int>(Work::kDrainMarker); ++k) {
        for (const std::uint64_t index : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{255}, kWorkIndexMask}) {
            const WorkId id = decode_work_id(work_id(static_cast<Work>(k), index));
            EXPECT_EQ(static_cast<int>(id.work), k);
            EXPECT_EQ(id.index, index);
        }
    }
}

TEST(WorkId, KindsNeverCollide) {
    // A receive's buffer 0 and a frame write number 0 must not look alike:
    // the failure of one is the peer's doing, of the other the path's.
    EXPECT_NE(work_id(Work::kControlRecv, 0), work_id(Work::kFrameWrite, 0));
    EXPECT_NE(work_id(Work::kCreditSend, 3), work_id(Work::kBindWindow, 3));
    EXPECT_EQ(decode_work_id(work_id(Work::kInvalidate, 7)).work, Work::kInvalidate);
}

TEST(WorkId, AValueOfNoKindIsRefused) {
    EXPECT_THROW(decode_work_id(0), std::logic_error);          // kind 0
    EXPECT_THROW(decode_work_id(UINT64_MAX), std::logic_error); // kind 255
    EXPECT_THROW(decode_work_id(std::uint64_t{11} << kWorkIndexBits), std::logic_error);
    try {
        decode_work_id(42);
        FAIL() << "decoded";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("0x2a"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace rdmastream
