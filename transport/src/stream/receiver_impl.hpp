// SPDX-License-Identifier: LGPL-2.1-or-later
// What a Receiver is underneath (receiver.hpp): one path's FrameReceiver
// (receiver.cpp), or two paths' PathReceiver and what brings lost paths
// back (receiver_two_paths.cpp).
#pragma once

#include "rdmastream/receiver.hpp"

#include "setup/busy_refuser.hpp"
#include "setup/door_impl.hpp"
#include "stream/frame_receiver.hpp"
#include "stream/path_receiver.hpp"
#include "stream/path_rejoin.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace rdmastream {

struct Receiver::Impl {
    std::unique_ptr<DoorClaim> door;   // listening: the listener, held while this receiver lives
    std::unique_ptr<DoorClaim> door_b; // two paths, listening: path B's
    std::unique_ptr<PathRejoin> rejoin; // two paths: after the doors (it serves their listeners), before `paths`
    std::unique_ptr<PathReceiver> paths; // two paths; else `rx`
    std::unique_ptr<FrameReceiver> rx;
    std::optional<ReceivedFrame> first; // the admitted sender's first frame, not yet handed out
    std::optional<BusyRefuser> busy;    // last: stops before the rest goes

    const FrameReceiver& founder() const noexcept;
    // The connection whose ring and formats the Receiver reports.
    const FrameReceiver& receiver() const noexcept { return paths ? founder() : *rx; }
};

RingConfig ring_config(const ReceiverConfig& c);

// The sender on probation sends its first frame, with a format, within the
// handshake timeout (the caller set its FrameReceiver's first_frame_by),
// and the caller's check passes it: the frame, held for the first
// wait_frame(). nullopt when the waker was woken; throws (the sender's
// refusal) otherwise.
std::optional<ReceivedFrame> first_frame(const std::function<FrameReceiver::Arrival(std::chrono::milliseconds)>& wait,
                                         const std::string& peer, const ReceiverConfig& c);

} // namespace rdmastream
