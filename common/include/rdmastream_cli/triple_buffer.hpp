// SPDX-License-Identifier: LGPL-2.1-or-later
// A triple buffer: one writer hands complete values to one reader, and
// neither ever waits for the other, retries or takes a lock.
//
// Three slots: the writer owns one (back), the reader owns one (front), the
// third sits in the middle. publish() swaps the writer's slot with the
// middle one in a single atomic exchange, marking it fresh; latest() swaps
// the reader's slot with the middle one when it is fresh. Each slot belongs
// to exactly one side at a time, so T may hold anything (strings, vectors),
// and the exchange's acquire/release ordering makes the writer's plain
// stores visible to the reader that takes the slot. A reader that looks
// twice between two publishes sees the same value; a writer that publishes
// twice between two looks overwrites the older one, which nobody missed.
//
// Thread rule: back() and publish() on the writer's thread only; latest() on
// one reader thread at a time (readers among themselves must serialise).
#pragma once

#include <array>
#include <atomic>

namespace rdmastream::cli {

template <typename T>
class TripleBuffer {
public:
    // Writer: the value to fill before the next publish(). It holds whatever
    // the slot held last (an older value, or T{}): overwrite every field.
    T& back() noexcept { return slots_[back_]; }
    // Writer: hands back() to the reader; back() is another slot afterwards.
    void publish() noexcept { back_ = middle_.exchange(back_ | kFresh, std::memory_order_acq_rel) & kIndex; }

    // Reader: the newest value published (T{} before the first publish). It
    // stays valid, unchanged, until the reader's next latest().
    const T& latest() noexcept {
        if (middle_.load(std::memory_order_relaxed) & kFresh) {
            front_ = middle_.exchange(front_, std::memory_order_acq_rel) & kIndex;
        }
        return slots_[front_];
    }

private:
    static constexpr unsigned kIndex = 3;
    static constexpr unsigned kFresh = 4;
    std::array<T, 3> slots_{};
    unsigned back_ = 0;              // writer's
    unsigned front_ = 1;             // reader's
    std::atomic<unsigned> middle_{2}; // index | kFresh once the writer put a value there
};

} // namespace rdmastream::cli
