// SPDX-License-Identifier: LGPL-2.1-or-later
// The RDMA check trusts these helpers to tell a good frame from a bad one.
#include "../rdma/frame_pattern.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace rdmastream::check;

TEST(FramePattern, MismatchFindsTheChangedByte) {
    std::vector<std::byte> buf(1001);
    fill(buf, 17);
    EXPECT_EQ(first_mismatch(buf, 17), buf.size());
    EXPECT_NE(first_mismatch(buf, 18), buf.size()); // another frame's bytes are not this frame's
    buf[999] ^= std::byte{0x80};
    EXPECT_EQ(first_mismatch(buf, 17), 999u);
}

TEST(FramePattern, SizesStayInRange) {
    for (std::uint64_t s = 0; s < 1000; ++s) {
        const auto n = frame_size(s, 10, 20);
        EXPECT_GE(n, 10u);
        EXPECT_LE(n, 20u);
    }
}
