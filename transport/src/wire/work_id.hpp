// SPDX-License-Identifier: LGPL-2.1-or-later
// What a work request's wr_id says: one encoding for every work request a
// stream end posts on its QP, and one decoder that checks it.
//
// A completion's wr_id is the only field that names the work request it
// completes: a failed completion carries no valid opcode (ibv_poll_cq(3)),
// so the kind of request must be in wr_id for the failure to be explained
// (a receive refused by the NIC is the peer's doing; a failed write is the
// path's). The top byte is the kind, the low 56 bits an index whose meaning
// the kind gives. wr_id is ours, never the peer's: a value that does not
// decode is a bug here, not a hostile peer.
#pragma once

#include <cstdint>

namespace rdmastream {

enum class Work : std::uint8_t {
    kFrameWrite = 1,    // sender: a frame's WRITE_WITH_IMM; index: its posted number (0, 1, 2, ...)
    kControlSend = 2,   // either end: a control message (one in flight at a time); index 0
    kControlRecv = 3,   // either end: a receive; index: its control buffer
    kCreditSend = 4,    // receiver: a credits message; index: its number (0, 1, 2, ...)
    kLeavingSend = 5,   // receiver: leave()'s message; index 0
    kBindWindow = 6,    // receiver: a slot's window bind; index: the slot
    kInvalidate = 7,    // receiver: a slot's window invalidation; index: the slot
    kHandshakeSend = 8, // handshake: the key proof
    kHandshakeRecv = 9, // handshake: a receive; index: its buffer
    kDrainMarker = 10,  // RcConnection::stop_qp: the marker behind everything else
};

struct WorkId {
    Work work;
    std::uint64_t index;
};

inline constexpr unsigned kWorkIndexBits = 56;
inline constexpr std::uint64_t kWorkIndexMask = (std::uint64_t{1} << kWorkIndexBits) - 1;

// An index beyond 56 bits would take 2^56 frames (years at any rate):
// masked, never checked, on the per-frame path.
constexpr std::uint64_t work_id(Work work, std::uint64_t index = 0) noexcept {
    return (std::uint64_t{static_cast<std::uint8_t>(work)} << kWorkIndexBits) | (index & kWorkIndexMask);
}

// Throws std::logic_error naming the value if it is no wr_id of ours.
WorkId decode_work_id(std::uint64_t wr_id);

} // namespace rdmastream
