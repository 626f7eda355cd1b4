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

std::string ReceiverSlots::uncredited() const {
    // "slot 0", "slots 0, 2 and 5" for the slots owned by `who`.
    const auto list = [this](Owner who, std::size_t& count) {
        std::string out;
        count = 0;
        for (std::size_t s = 0; s < owner_.size(); ++s) {
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
    if (slot < owner_.size() && owner_[slot] == kCreditPending) {
        owner_[slot] = kSender;
    }
}

} // namespace rdmastream
