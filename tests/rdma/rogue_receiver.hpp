// SPDX-License-Identifier: LGPL-2.1-or-later
// A receiver that breaks the protocol on purpose, for tests only: the
// counterpart of rogue_sender.hpp. It speaks the wire format by hand (not
// through FrameReceiver), so it can send what a correct receiver never
// would; a genuine sender (FrameSender: rdma-ring-check, rdmasend, rdmasink)
// must refuse each fault, name this receiver and the reason, and neither
// crash nor hang.
#pragma once

#include "setup/listener.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace rdmastream::check {

// Listens on `local`, accepts one sender (protocol 4, no key) with a ring
// of `slots` x `slot_size`, sends its ring advert (the handshake's last
// step, solicited), then per `fault`:
//   early-credits   a credit for slot 0 as soon as the connection is up,
//                   before any frame (the sender holds every credit);
//   never-given     after the first frame, a credit for the last slot, which
//                   the sender never wrote (run the sender with fewer frames
//                   than slots);
//   ring-advert     a second ring message (kind 4), nobody asked for,
//                   describing another valid ring, right after the first;
//   no-imm          a SEND without an immediate;
//   oversized       a credits message of 4096 bytes, longer than any
//                   receive a sender posts.
// Otherwise it takes frames and never returns a credit. Returns 0 once the
// sender hangs up (what a refusal does), 1 if it does not within
// `idle_timeout`.
int run_rogue_receiver(const Endpoint& local, const std::string& fault, std::uint32_t slots,
                       std::uint32_t slot_size, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds idle_timeout);

} // namespace rdmastream::check
