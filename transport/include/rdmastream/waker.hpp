// SPDX-License-Identifier: LGPL-2.1-or-later
// Wakes a thread that waits in the transport (for a frame, a credit, a
// delivery) from another thread or a signal handler: a slot freed
// downstream, GStreamer's unlock(), Ctrl-C. The waiter's wait returns
// "woken" at once, so the caller can hand back freed slots or stop.
//
// A wake costs no syscall unless the waiter is asleep: wake() writes the
// eventfd only when the waiter announced a sleep. The two flags are seq_cst,
// so either the waiter sees `woken_` before it sleeps or the waker sees
// `sleeping_` and writes (the store-load pairing of Dekker's algorithm): a
// wake is never lost. A busy-polling waiter only reads `woken_`.
#pragma once

#include <atomic>
#include <chrono>

namespace rdmastream {

class Waker {
public:
    Waker(); // throws SystemError if eventfd(2) fails
    ~Waker();
    Waker(const Waker&) = delete;
    Waker& operator=(const Waker&) = delete;

    // Any thread, and async-signal-safe (a lock-free store and write(2)).
    void wake() noexcept;

    // The waiter: whether a wake came since the last take (and clears it).
    bool take() noexcept { return woken_.exchange(false); }
    // Cheap check without clearing, for a spinning waiter.
    bool pending() const noexcept { return woken_.load(std::memory_order_relaxed); }

    // The waiter, around a sleep on fd(): sleep_begin() announces it and
    // says whether to sleep (false: a wake is pending, so don't, and take()
    // it); after a sleep, sleep_end(fd_ready) ends it and drains the eventfd
    // when poll(2) said it is readable.
    bool sleep_begin() noexcept;
    void sleep_end(bool fd_ready) noexcept;
    int fd() const noexcept { return fd_; }

private:
    std::atomic<bool> woken_{false};
    std::atomic<bool> sleeping_{false};
    int fd_;
};

// What ended a wait_readable().
enum class Readiness { kReadable, kWoken, kTimedOut };
// Waits until `fd` is readable, `waker` is woken (the wake is taken) or
// `timeout` passes; fd -1 waits for the other two only. For set-up waits
// that must stay interruptible, e.g. a listener's fd while GStreamer may
// call unlock(), or the pause between two dials.
Readiness wait_readable(int fd, Waker& waker, std::chrono::milliseconds timeout);

} // namespace rdmastream
