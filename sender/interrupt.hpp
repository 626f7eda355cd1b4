// SPDX-License-Identifier: LGPL-2.1-or-later
// Ctrl-C for rdmasend. The SIGINT handler sets a flag the send loop reads
// between frames and wakes the Waker the Sender was opened with, so a wait
// inside the transport (for a receiver to dial in, for a credit, for a
// frame's delivery) ends at once instead of at its timeout.
//
// Thread rule: one Interrupt at a time (the handler reaches it through a
// global); made and dropped on the main thread.
#pragma once

#include "rdmastream/waker.hpp"

#include <memory>

namespace rdmastream::cli {

class Interrupt {
public:
    // Installs the SIGINT handler.
    Interrupt();
    // Puts the previous handler back.
    ~Interrupt();
    Interrupt(const Interrupt&) = delete;
    Interrupt& operator=(const Interrupt&) = delete;

    // For SenderConfig::waker.
    const std::shared_ptr<Waker>& waker() const noexcept { return waker_; }
    // Whether Ctrl-C came.
    bool requested() const noexcept;
    // Puts the previous handler back now: a Ctrl-C while the stream ends
    // (finish) acts as it would without rdmasend's handler.
    void restore() noexcept;

private:
    std::shared_ptr<Waker> waker_;
    void (*previous_)(int) = nullptr;
};

} // namespace rdmastream::cli
