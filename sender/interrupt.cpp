// SPDX-License-Identifier: LGPL-2.1-or-later
#include "interrupt.hpp"

#include <atomic>
#include <csignal>

namespace rdmastream::cli {
namespace {

volatile std::sig_atomic_t g_requested = 0;
// The handler's way to the Waker: a lock-free atomic, so reading it in the
// handler is async-signal-safe, as Waker::wake() is.
std::atomic<Waker*> g_waker{nullptr};
static_assert(std::atomic<Waker*>::is_always_lock_free);

extern "C" void on_interrupt(int) {
    g_requested = 1;
    if (Waker* w = g_waker.load()) w->wake();
}

} // namespace

Interrupt::Interrupt() : waker_(std::make_shared<Waker>()) {
    g_requested = 0;
    g_waker.store(waker_.get());
    previous_ = std::signal(SIGINT, on_interrupt);
}

Interrupt::~Interrupt() {
    restore();
    g_waker.store(nullptr); // the Waker may go now: no handler reaches it
}

bool Interrupt::requested() const noexcept { return g_requested != 0; }

// Twice (restore(), then the destructor) sets the same handler twice.
void Interrupt::restore() noexcept { std::signal(SIGINT, previous_); }

} // namespace rdmastream::cli
