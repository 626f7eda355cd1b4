// SPDX-License-Identifier: LGPL-2.1-or-later
// What a Door holds (door.hpp): the peer to dial, or a bound listener, and
// whether a stream end opened through it is using the listener now (a
// BusyRefuser or a fan-out owns it meanwhile).
#pragma once

#include "rdmastream/door.hpp"
#include "rdmastream/error.hpp"
#include "setup/cm_event_channel.hpp"
#include "setup/listener.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

namespace rdmastream {

struct Door::Impl {
    Endpoint endpoint;                  // the peer to dial, or the address bound
    std::unique_ptr<Listener> listener; // listening only
    bool in_use = false;                // a stream end opened through it holds the listener

    // Refuses a second stream end while one holds the listener (a caller's bug).
    void claim();
};

// Holds a listening Door's listener for one stream end, and gives it back.
class DoorClaim {
public:
    explicit DoorClaim(std::shared_ptr<Door::Impl> door);
    ~DoorClaim();
    DoorClaim(const DoorClaim&) = delete;
    DoorClaim& operator=(const DoorClaim&) = delete;
    Listener& listener() const noexcept { return *door_->listener; }

private:
    std::shared_ptr<Door::Impl> door_; // keeps the listener as long as the stream end
};

// What is left of a wait until `deadline` (never negative).
inline std::chrono::milliseconds time_left(std::chrono::steady_clock::time_point deadline) {
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
}

} // namespace rdmastream
