// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/busy_refuser.hpp"

#include <cstdio>
#include <exception>

namespace rdmastream {

BusyRefuser::BusyRefuser(Listener& listener, std::string serving)
    : listener_(listener),
      text_("busy: this listener serves one peer at a time and is streaming with " + std::move(serving) +
            "; try again when that stream ends"),
      thread_([this] { run(); }) {}

BusyRefuser::~BusyRefuser() {
    stopping_.store(true);
    stop_.wake();
    thread_.join();
}

void BusyRefuser::run() {
    while (!stopping_.load()) {
        try {
            if (wait_readable(listener_.fd(), stop_, std::chrono::hours(1)) == Readiness::kReadable) {
                listener_.refuse_waiting(wire::RejectReason::kBusy, text_);
            }
        } catch (const std::exception& e) {
            // The listener itself failed (its device went): nobody can dial
            // it any more, so there is nothing left to refuse.
            std::fprintf(stderr, "rdmastream: stopped answering connect requests: %s\n", e.what());
            return;
        }
    }
}

} // namespace rdmastream
