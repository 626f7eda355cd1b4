// SPDX-License-Identifier: LGPL-2.1-or-later
// While a listener serves one peer, every other peer that dials it is told
// "busy" at once (a reject with RejectReason::kBusy, logged by the
// listener) instead of waiting in the backlog for a handshake that never
// comes. The connecting side reports "... refused the connection: busy ...".
//
// This is the one thread the transport starts, and only when a caller makes
// a BusyRefuser: it sleeps on the listener's fd and a Waker, so it costs the
// stream nothing while nobody dials. It touches only the listener (whose
// event channel no served connection shares); the caller must not use the
// listener while a BusyRefuser is alive.
#pragma once

#include "setup/listener.hpp"
#include "rdmastream/waker.hpp"

#include <atomic>
#include <string>
#include <thread>

namespace rdmastream {

class BusyRefuser {
public:
    // `serving`: who is being served, for the refusal's text.
    BusyRefuser(Listener& listener, std::string serving);
    ~BusyRefuser(); // stops and joins the thread
    BusyRefuser(const BusyRefuser&) = delete;
    BusyRefuser& operator=(const BusyRefuser&) = delete;

private:
    void run();

    Listener& listener_;
    std::string text_;
    Waker stop_;
    std::atomic<bool> stopping_{false};
    std::thread thread_; // last: starts once everything it reads exists
};

} // namespace rdmastream
