// SPDX-License-Identifier: LGPL-2.1-or-later
// A sender that breaks the protocol on purpose, for tests only. It speaks
// the wire format by hand (not through FrameSender), so it can send what a
// correct sender never would, and doubles as a second, independent reading
// of docs/protocol.md.
#pragma once

#include "setup/rc_connection.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace rdmastream::check {

// Streams `frames` pattern frames (as rdma-ring-check's sender does, one
// frame per slot in credit order) with frame 1 broken per `fault`:
// wrong-rkey, wrong-imm, stale-generation, corrupt-payload; or held-slot:
// frames 0 and 1, then, once slot 1's credit is back (the receiver, run with
// --hold-first, handed frame 1 out and still holds frame 0), a frame into
// slot 0 with the key frame 0 was written with. Or announces a
// stream format first and sends every frame in it, correct but for the
// format (`fault`): hostile-layout (issue 11's: GRAY8 4096x4096 in
// 4096-byte frames, plane 0 stride 0x7fffffff; 4096-byte frames),
// short-frame (GRAY8 64x64, frames of 100 bytes where 4096 are needed),
// huge-frame (frames of up to 2^30 - 64 bytes: a ring of slots x 1 GiB if
// the receiver took it), audio-ragged (stereo S16 audio in frames of 4094
// bytes: not a whole number of 4-byte sample frames). Returns the exit status; throws when the connection
// fails (as it should).
int run_rogue_sender(const Endpoint& receiver, const std::string& fault, std::uint64_t frames,
                     std::chrono::milliseconds connect_timeout, std::chrono::milliseconds idle_timeout);

} // namespace rdmastream::check
