// SPDX-License-Identifier: LGPL-2.1-or-later
#include "datapath/slot_credits.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {

SenderCredits::SenderCredits(std::uint32_t slot_count, std::uint16_t base)
    : fifo_(slot_count), base_(base), count_(slot_count), held_(slot_count, true), generation_(slot_count, 0) {
    for (std::uint32_t i = 0; i < slot_count; ++i) {
        fifo_[i] = static_cast<std::uint16_t>(base + i);
    }
}

void SenderCredits::give_back(wire::SlotImm credit) {
    if (credit.slot < base_ || static_cast<std::size_t>(credit.slot - base_) >= held_.size()) {
        throw ProtocolError(base_ == 0 ? fmt::format("credit for slot {}, but the ring has {} slots", credit.slot,
                                                     held_.size())
                                       : fmt::format("credit for slot {}, outside the flow's slots {}..{}",
                                                     credit.slot, base_, base_ + held_.size() - 1));
    }
    const std::size_t i = credit.slot - base_;
    if (held_[i]) {
        throw ProtocolError(fmt::format("credit for slot {}, which the sender already holds", credit.slot));
    }
    if (credit.generation != generation_[i]) {
        throw ProtocolError(fmt::format("credit for slot {} generation {}, expected {}", credit.slot,
                                        credit.generation, generation_[i]));
    }
    held_[i] = true;
    fifo_[wrap(head_ + count_)] = credit.slot;
    ++count_;
}

ReceiverSlots::ReceiverSlots(std::uint32_t slot_count, std::uint32_t capacity)
    : slot_count_(slot_count),
      owner_(std::max(slot_count, capacity), kSender),
      generation_(std::max(slot_count, capacity), 0) {}

void ReceiverSlots::reset(std::uint32_t base, std::uint32_t count) {
    if (std::size_t{base} + count > owner_.size()) {
        throw std::logic_error(fmt::format("receiver slots: range {}+{} past the capacity of {}", base, count,
                                           owner_.size()));
    }
    std::fill_n(owner_.begin() + base, count, kSender);
    std::fill_n(generation_.begin() + base, count, std::uint16_t{0});
    slot_count_ = std::max(slot_count_, base + count);
}

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
    if (slot >= slot_count_ || owner_[slot] != kConsumer) {
        throw std::logic_error(fmt::format("release of slot {}, which holds no frame", slot));
    }
    owner_[slot] = kCreditPending;
    return wire::SlotImm{slot, ++generation_[slot]};
}

std::string ReceiverSlots::uncredited() const {
    // "slot 0", "slots 0, 2 and 5" for the slots owned by `who`.
    const auto list = [this](Owner who, std::size_t& count) {
        std::string out;
        count = 0;
        for (std::size_t s = 0; s < slot_count_; ++s) {
            if (owner_[s] == who) out += fmt::format("{}{}", count++ == 0 ? "" : ", ", s);
        }
        if (const auto last = out.rfind(", "); last != std::string::npos) out.replace(last, 2, " and ");
        return fmt::format("{} {}", count == 1 ? "slot" : "slots", out);
    };
    std::size_t held = 0, pending = 0;
    const std::string consumer = list(kConsumer, held), credit = list(kCreditPending, pending);
    std::string out;
    if (held > 0) out = consumer + (held == 1 ? " (its frame is with the consumer)" : " (their frames are with the consumer)");
    if (pending > 0) {
        out += fmt::format("{}{}{}", held > 0 ? "; " : "", credit,
                           pending == 1 ? " (its credit is not sent yet)" : " (their credits are not sent yet)");
    }
    return out;
}

void ReceiverSlots::credit_sent(std::uint16_t slot) noexcept {
    if (slot < slot_count_ && owner_[slot] == kCreditPending) {
        owner_[slot] = kSender;
    }
}

} // namespace rdmastream
