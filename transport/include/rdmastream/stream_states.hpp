// SPDX-License-Identifier: LGPL-2.1-or-later
// The state machine of each stream end: one enum each, and the one table
// of transitions each may take. FrameSender and FrameReceiver change state
// only through step(), which refuses a transition the table does not list
// (std::logic_error: a bug here, never the peer's doing). Where a change
// may not apply (a failure after the stream ended), the end asks allowed()
// first and steps only if it may.
//
// Sender:
//   kStreaming --set_format/begin_format--> kFormatPosted --taken (and the
//   grown ring adopted, if it grows)--> kStreaming
//   kStreaming --finish--> kEnding --ack, or the receiver's hang-up after
//   every frame--> kEnded
//   any live state --kLeaving message--> kLeft
//   any live state --failed completion, lost connection, refusal--> kFailed
//   every state --stop()--> kStopped (the last)
// Receiver:
//   kStreaming --end of stream arrives--> kEndArrived --every frame before
//   it handed out--> kEnded
//   kStreaming, kEndArrived, kEnded --leave()--> kLeft (after the end it
//   only hangs up)
//   any live state --failed completion, lost connection, refusal--> kFailed
// (a ring that grows does so inside one call: it is no state of its own).
#pragma once

#include <cstdint>

namespace rdmastream {

enum class SenderState : std::uint8_t {
    kStreaming,    // frames flow (a keepalive may be in flight)
    kFormatPosted, // a format is on its way: frames wait until the receiver took it (and grew its ring)
    kEnding,       // end of stream posted: no more frames; waiting for its acknowledgement
    kEnded,        // the receiver has the end of stream
    kLeft,         // the receiver said it wants no more: leaving() says so in words
    kFailed,       // a completion failed, the connection went, or the receiver was refused
    kStopped,      // stop() ran: nothing but the destructor follows
};

enum class ReceiverState : std::uint8_t {
    kStreaming,  // frames arrive
    kEndArrived, // the end of stream arrived; frames before it may still wait for their windows
    kEnded,      // every frame before the end was handed out: wait_frame() says kEnd
    kLeft,       // leave() ran: no more credits go out
    kFailed,     // a completion failed, the connection went, or the sender was refused
};

const char* name(SenderState s) noexcept;
const char* name(ReceiverState s) noexcept;
bool allowed(SenderState from, SenderState to) noexcept;
bool allowed(ReceiverState from, ReceiverState to) noexcept;

// `state` = `to`, or std::logic_error naming both if the table has no such
// transition. Staying in a state is always allowed (a second failure while
// reporting the first is still one failure).
void step(SenderState& state, SenderState to);
void step(ReceiverState& state, ReceiverState to);

} // namespace rdmastream
