// SPDX-License-Identifier: LGPL-2.1-or-later
// The slot bookkeeping of both ends (SenderCredits, ReceiverSlots) driven by
// a byte stream of operations: honest ones, as the transport performs them,
// and hostile ones, as a peer could forge them.
//
// Input: 1 byte slot count (1..64), then operations, one byte each plus
// their operands:
//   0 send      the sender takes a credit and its frame arrives at the receiver
//   1 release   the consumer releases its k-th held slot (1 byte k); the
//               credit goes out and travels home to the sender
//   2 forge imm a frame with any immediate arrives (4 bytes)
//   3 forge credit  any credit arrives at the sender (4 bytes)
//   4 take      the sender takes a credit whose frame is lost in flight
// Properties: the sender never holds a slot twice and counts what it holds;
// the receiver's view matches what arrived and was released; as long as
// every operation so far was honest, nothing honest is refused.
#include "fuzz_input.hpp"

#include "datapath/slot_credits.hpp"

#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

namespace {

struct Bed {
    explicit Bed(std::uint32_t slots) : tx(slots), rx(slots), out(slots, false), held(slots, false) {}

    rdmastream::SenderCredits tx;
    rdmastream::ReceiverSlots rx;
    std::vector<bool> out;  // slots the sender handed out, no credit back yet
    std::vector<bool> held; // slots the receiver's consumer holds
    bool honest = true;     // no forged message was accepted, no frame lost

    void took(wire::SlotImm imm) {
        FUZZ_CHECK(imm.slot < out.size());
        FUZZ_CHECK(!out[imm.slot]); // never the same slot twice
        out[imm.slot] = true;
    }
    void arrived(wire::SlotImm imm) {
        FUZZ_CHECK(!held[imm.slot]);
        held[imm.slot] = true;
        FUZZ_CHECK(rx.held(imm.slot));
    }
    void check() const {
        std::uint32_t outstanding = 0;
        for (std::size_t s = 0; s < out.size(); ++s) {
            outstanding += out[s] ? 1 : 0;
            FUZZ_CHECK(rx.held(static_cast<std::uint16_t>(s)) == held[s]);
        }
        FUZZ_CHECK(tx.available() + outstanding == tx.slot_count());
        FUZZ_CHECK(tx.all_home() == (outstanding == 0));
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const std::uint32_t slots = 1 + in.take<std::uint8_t>() % 64;
    Bed bed(slots);
    while (!in.empty()) {
        switch (in.take<std::uint8_t>() % 5) {
        case 0: { // send
            const auto imm = bed.tx.take();
            if (!imm) {
                break; // no credit: the sender waits
            }
            bed.took(*imm);
            const auto got = accepted([&] { return bed.rx.arrive(wire::encode(*imm)); });
            FUZZ_CHECK(got || !bed.honest);
            if (got) {
                FUZZ_CHECK(got->slot == imm->slot && got->generation == imm->generation);
                bed.arrived(*got);
            }
            break;
        }
        case 1: { // release
            std::vector<std::uint16_t> mine;
            for (std::uint16_t s = 0; s < slots; ++s) {
                if (bed.held[s]) mine.push_back(s);
            }
            const auto k = in.take<std::uint8_t>();
            if (mine.empty()) {
                break;
            }
            const std::uint16_t slot = mine[k % mine.size()];
            const wire::SlotImm credit = bed.rx.release(slot);
            bed.rx.credit_sent(slot); // it goes out at once
            bed.held[slot] = false;
            FUZZ_CHECK(credit.slot == slot);
            const bool home = accepted([&] {
                                  bed.tx.give_back(credit);
                                  return true;
                              }).has_value();
            FUZZ_CHECK(home || !bed.honest);
            if (home) {
                FUZZ_CHECK(bed.out[slot]);
                bed.out[slot] = false;
            }
            break;
        }
        case 2: { // forged immediate
            const auto value = in.take<std::uint32_t>();
            if (const auto got = accepted([&] { return bed.rx.arrive(value); })) {
                bed.arrived(*got);
                bed.honest = false;
            }
            break;
        }
        case 3: { // forged credit
            const auto value = in.take<std::uint32_t>();
            const wire::SlotImm credit{static_cast<std::uint16_t>(value & 0xffffu), static_cast<std::uint16_t>(value >> 16)};
            if (accepted([&] {
                    bed.tx.give_back(credit);
                    return true;
                })) {
                FUZZ_CHECK(credit.slot < slots && bed.out[credit.slot]); // only a slot it had handed out
                bed.out[credit.slot] = false;
                bed.honest = false;
            }
            break;
        }
        case 4: // a frame lost in flight
            if (const auto imm = bed.tx.take()) {
                bed.took(*imm);
                bed.honest = false;
            }
            break;
        }
        bed.check();
    }
    return 0;
}
