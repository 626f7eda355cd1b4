// SPDX-License-Identifier: LGPL-2.1-or-later
#include "datapath/slot_credits.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream {

SenderCredits::SenderCredits(std::uint32_t slot_count)
    : fifo_(slot_count), count_(slot_count), held_(slot_count, true), generation_(slot_count, 0) {
    for (std::uint32_t i = 0; i < slot_count; ++i) {
        fifo_[i] = static_cast<std::uint16_t>(i);
    }
}

void SenderCredits::give_back(wire::SlotImm credit) {
    if (credit.slot >= held_.size()) {
        throw ProtocolError(fmt::format("credit for slot {}, but the ring has {} slots", credit.slot, held_.size()));
    }
    if (held_[credit.slot]) {
        throw ProtocolError(fmt::format("credit for slot {}, which the sender already holds", credit.slot));
    }
    if (credit.generation != generation_[credit.slot]) {
        throw ProtocolError(fmt::format("credit for slot {} generation {}, expected {}", credit.slot,
                                        credit.generation, generation_[credit.slot]));
    }
    held_[credit.slot] = true;
    fifo_[wrap(head_ + count_)] = credit.slot;
    ++count_;
}

ReceiverSlots::ReceiverSlots(std::uint32_t slot_count) : owner_(slot_count, kSender), generation_(slot_count, 0) {}

wire::SlotImm ReceiverSlots::arrive(std::uint32_t imm_value) {
    const wire::SlotImm imm = wire::decode_slot_imm(imm_value, slot_count());
    if (owner_[imm.slot] == kConsumer) {
        throw ProtocolError(fmt::format("frame written into slot {} while the consumer still holds it: the "
                                        "sender wrote without a credit",
                                        imm.slot));
    }
    if (owner_[imm.slot] == kCreditPending) {
        throw ProtocolError(fmt::format("frame written into slot {} before its credit went out: the sender "
                                        "wrote without a credit",
                                        imm.slot));
    }
    if (imm.generation != generation_[imm.slot]) {
        throw ProtocolError(fmt::format("slot {} generation {}, expected {}: stale or forged immediate", imm.slot,
                                        imm.generation, generation_[imm.slot]));
    }
    owner_[imm.slot] = kConsumer;
    return imm;
}

wire::SlotImm ReceiverSlots::release(std::uint16_t slot) {
    if (slot >= owner_.size() || owner_[slot] != kConsumer) {
        throw std::logic_error(fmt::format("release of slot {}, which holds no frame", slot));
    }
    owner_[slot] = kCreditPending;
    return wire::SlotImm{slot, ++generation_[slot]};
}

void ReceiverSlots::credit_sent(std::uint16_t slot) noexcept {
    if (slot < owner_.size() && owner_[slot] == kCreditPending) {
        owner_[slot] = kSender;
    }
}

} // namespace rdmastream
