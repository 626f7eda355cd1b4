// SPDX-License-Identifier: LGPL-2.1-or-later
// Credit bookkeeping: the sender never gets a slot twice, the receiver
// refuses writes it gave no credit for, and release may come in any order.
#include "rdmastream/error.hpp"
#include "datapath/slot_credits.hpp"

#include <gtest/gtest.h>

#include <string>

using rdmastream::ProtocolError;
using rdmastream::ReceiverSlots;
using rdmastream::SenderCredits;
using rdmastream::wire::encode;
using rdmastream::wire::SlotImm;

TEST(SenderCredits, HandsOutEverySlotOnceThenWaits) {
    SenderCredits c(3);
    EXPECT_TRUE(c.all_home());
    EXPECT_EQ(c.take()->slot, 0);
    EXPECT_EQ(c.take()->slot, 1);
    EXPECT_EQ(c.take()->slot, 2);
    EXPECT_FALSE(c.take().has_value());
    EXPECT_EQ(c.available(), 0u);
}

TEST(SenderCredits, ReusesSlotsInTheOrderCreditsReturn) {
    SenderCredits c(3);
    for (int i = 0; i < 3; ++i) c.take();
    c.give_back({2, 1});
    c.give_back({0, 1});
    const auto a = c.take();
    EXPECT_EQ(a->slot, 2);
    EXPECT_EQ(a->generation, 1);
    EXPECT_EQ(c.take()->slot, 0);
}

// next() shows the credit take() gives and takes nothing: a write made with
// it whose post fails leaves the credit where it was.
TEST(SenderCredits, NextLeavesTheCreditInPlace) {
    SenderCredits c(2);
    c.take();
    c.give_back({0, 1});
    ASSERT_EQ(c.next()->slot, 1);
    EXPECT_EQ(c.next()->slot, 1); // looked at twice: still there
    EXPECT_EQ(c.available(), 2u);
    const auto taken = c.take();
    EXPECT_EQ(taken->slot, 1);
    EXPECT_EQ(taken->generation, 0);
    EXPECT_EQ(c.next()->slot, 0);
    EXPECT_EQ(c.next()->generation, 1);
    c.take();
    EXPECT_FALSE(c.next().has_value());
}

TEST(SenderCredits, RefusesCreditsItDidNotGiveOut) {
    SenderCredits c(2);
    EXPECT_THROW(c.give_back({0, 0}), ProtocolError); // never written
    c.take();
    EXPECT_THROW(c.give_back({0, 0}), ProtocolError); // wrong generation (next is 1)
    EXPECT_THROW(c.give_back({5, 1}), ProtocolError); // out of range
    c.give_back({0, 1});
    EXPECT_THROW(c.give_back({0, 1}), ProtocolError); // twice
}

TEST(ReceiverSlots, AcceptsCreditedWritesAndReleasesOutOfOrder) {
    ReceiverSlots r(4);
    SenderCredits s(4);
    // Four frames land, the consumer releases 2, 0, 3, 1; every credit is valid.
    for (int i = 0; i < 4; ++i) r.arrive(encode(*s.take()));
    for (std::uint16_t slot : std::initializer_list<std::uint16_t>{2, 0, 3, 1}) {
        s.give_back(r.release(slot));
        r.credit_sent(slot);
    }
    EXPECT_TRUE(s.all_home());
    // Next lap uses generation 1 everywhere, in release order.
    for (std::uint16_t slot : std::initializer_list<std::uint16_t>{2, 0, 3, 1}) {
        const auto imm = r.arrive(encode(*s.take()));
        EXPECT_EQ(imm.slot, slot);
        EXPECT_EQ(imm.generation, 1);
    }
}

TEST(ReceiverSlots, RefusesWritesWithoutCredit) {
    ReceiverSlots r(2);
    r.arrive(encode(SlotImm{1, 0}));
    EXPECT_THROW(r.arrive(encode(SlotImm{1, 0})), ProtocolError); // consumer still holds slot 1
    EXPECT_THROW(r.arrive(encode(SlotImm{0, 3})), ProtocolError); // stale/forged generation
    EXPECT_THROW(r.arrive(encode(SlotImm{2, 0})), ProtocolError); // out of range
    EXPECT_THROW(r.release(0), std::logic_error);                  // holds nothing
}

namespace {
// A slot the consumer released is not the sender's again until its credit
// has gone out: a write into it before then was made without a credit.
TEST(ReceiverSlots, RefusesAWriteBeforeTheCreditWentOut) {
    ReceiverSlots r(2);
    r.arrive(encode(SlotImm{0, 0}));
    const SlotImm credit = r.release(0);
    EXPECT_EQ(credit.generation, 1);
    try {
        r.arrive(encode(SlotImm{0, 1})); // the right generation, but no credit yet
        FAIL() << "a write before the credit went out was taken";
    } catch (const ProtocolError& e) {
        EXPECT_NE(std::string(e.what()).find("slot 0 before its credit went out"), std::string::npos) << e.what();
    }
    ReceiverSlots fresh(2);
    fresh.arrive(encode(SlotImm{0, 0}));
    fresh.release(0);
    fresh.credit_sent(0);
    EXPECT_EQ(fresh.arrive(encode(SlotImm{0, 1})).generation, 1); // once it went out: taken
}
} // namespace
