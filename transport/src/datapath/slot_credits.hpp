// SPDX-License-Identifier: LGPL-2.1-or-later
// Who may touch which ring slot, on each side. Pure bookkeeping, no verbs:
// the sender and receiver data paths call these, and the unit tests drive
// them with hostile input. Storage is sized once; nothing allocates per frame.
#pragma once

#include "wire/wire.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream {

// Sender side: the credits it holds, used in the order they came home.
// What runs per frame is defined here, so it inlines: front() and
// pop_front() for the sender's own writes, which check available() first
// (an optional, even inlined, went through the stack: a stalled load).
class SenderCredits {
public:
    // The credits of slots base..base+slot_count-1 (a flow's range of the
    // ring): all held, generation 0.
    explicit SenderCredits(std::uint32_t slot_count, std::uint16_t base = 0);

    // A slot to write the next frame into, with the generation to stamp on
    // it; nullopt when the receiver holds every slot (wait for a credit).
    std::optional<wire::SlotImm> take() noexcept {
        if (count_ == 0) {
            return std::nullopt;
        }
        const wire::SlotImm credit = front();
        pop_front();
        return credit;
    }
    // What take() would give, left in place: a write is made with it and
    // the credit taken only once the write is posted (a refused post
    // keeps it).
    std::optional<wire::SlotImm> next() const noexcept {
        if (count_ == 0) {
            return std::nullopt;
        }
        return front();
    }
    // next() and take() for a caller that saw available() > 0 (else
    // undefined).
    wire::SlotImm front() const noexcept {
        const std::uint16_t slot = fifo_[head_];
        return wire::SlotImm{slot, generation_[slot - base_]};
    }
    void pop_front() noexcept {
        const std::uint16_t slot = fifo_[head_];
        head_ = wrap(head_ + 1);
        --count_;
        held_[slot - base_] = false;
        ++generation_[slot - base_];
    }
    // A credit the receiver sent back. Refuses (ProtocolError) a slot out of
    // the range, one the sender already holds, or a generation that is not
    // the slot's next one.
    void give_back(wire::SlotImm credit);

    std::uint32_t available() const noexcept { return count_; }
    std::uint32_t slot_count() const noexcept { return static_cast<std::uint32_t>(held_.size()); }
    bool all_home() const noexcept { return count_ == held_.size(); }

private:
    // A fifo_ position past the end, brought back in (no division: it is
    // at most one lap out).
    std::uint32_t wrap(std::uint32_t i) const noexcept {
        return i >= fifo_.size() ? i - static_cast<std::uint32_t>(fifo_.size()) : i;
    }

    std::vector<std::uint16_t> fifo_; // ring buffer of credited slots (their numbers in the ring)
    std::uint16_t base_ = 0;          // the range's first slot: held_ and generation_ count from it
    std::uint32_t head_ = 0;
    std::uint32_t count_ = 0;
    std::vector<bool> held_;
    std::vector<std::uint16_t> generation_; // next generation to stamp per slot
};

// Receiver side: who owns each slot. The sender, from the start and again
// once the slot's credit has gone out; the consumer, from a frame's arrival
// until release; nobody in between (released, its credit not sent yet). A
// write completing in between was made without a credit; over an RC QP its
// bytes also spoil the slot header the earlier frame was checked by, so the
// header check would catch it too: this keeps the bookkeeping exact anyway.
class ReceiverSlots {
public:
    // Room for `capacity` slots, of which the first `slot_count` exist.
    explicit ReceiverSlots(std::uint32_t slot_count, std::uint32_t capacity = 0);
    // Slots base..base+count-1 (a flow's range, new or re-registered) exist
    // afresh: the sender owns them, generation 0. Within the capacity.
    void reset(std::uint32_t base, std::uint32_t count);

    // A frame's immediate. Refuses an index out of range, a slot the sender
    // does not own (the consumer holds it, or its credit has not gone out),
    // or a stale generation.
    wire::SlotImm arrive(std::uint32_t imm_value);
    // The consumer is done with `slot` (any order). Returns the credit to
    // send: the slot and the generation its next frame must carry.
    wire::SlotImm release(std::uint16_t slot);
    // The credit release() returned for `slot` went out: the sender owns it.
    void credit_sent(std::uint16_t slot) noexcept;

    bool held(std::uint16_t slot) const noexcept { return slot < owner_.size() && owner_[slot] == kConsumer; }
    // The slots the sender holds no credit for, for a refusal: "slot 0
    // (its frame is with the consumer)", "slots 0, 2 (their frames are with
    // the consumer) and 3 (its credit is not sent yet)"; "" when it holds
    // every credit. Allocates: error paths only.
    std::string uncredited() const;
    // The slots that exist: numbered 0..slot_count()-1.
    std::uint32_t slot_count() const noexcept { return slot_count_; }

private:
    enum Owner : std::uint8_t { kSender, kConsumer, kCreditPending };
    std::uint32_t slot_count_;
    std::vector<Owner> owner_;
    std::vector<std::uint16_t> generation_; // generation the next frame in the slot carries
};

} // namespace rdmastream
