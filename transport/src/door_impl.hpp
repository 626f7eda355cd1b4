// SPDX-License-Identifier: LGPL-2.1-or-later
// What a Door holds (door.hpp): the peer to dial, or a bound listener, and
// whether a stream end opened through it is using the listener now (a
// BusyRefuser or a fan-out owns it meanwhile).
#pragma once

#include "rdmastream/door.hpp"
#include "rdmastream/listener.hpp"

#include <memory>
#include <optional>

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

} // namespace rdmastream
