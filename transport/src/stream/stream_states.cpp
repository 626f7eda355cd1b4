// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/stream_states.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace rdmastream {

const char* name(SenderState s) noexcept {
    switch (s) {
    case SenderState::kStreaming: return "streaming";
    case SenderState::kFormatPosted: return "format posted";
    case SenderState::kEnding: return "ending";
    case SenderState::kEnded: return "ended";
    case SenderState::kLeft: return "receiver left";
    case SenderState::kFailed: return "failed";
    case SenderState::kStopped: return "stopped";
    }
    return "?";
}

const char* name(ReceiverState s) noexcept {
    switch (s) {
    case ReceiverState::kStreaming: return "streaming";
    case ReceiverState::kEndArrived: return "end arrived";
    case ReceiverState::kEnded: return "ended";
    case ReceiverState::kLeft: return "left";
    case ReceiverState::kFailed: return "failed";
    }
    return "?";
}

bool allowed(SenderState from, SenderState to) noexcept {
    using S = SenderState;
    if (from == to || to == S::kStopped) return true;
    switch (from) {
    case S::kStreaming: return to == S::kFormatPosted || to == S::kEnding || to == S::kLeft || to == S::kFailed;
    case S::kFormatPosted: return to == S::kStreaming || to == S::kLeft || to == S::kFailed;
    // A receiver may leave (or fail) while our end of stream is on its way.
    case S::kEnding: return to == S::kEnded || to == S::kLeft || to == S::kFailed;
    case S::kEnded:
    case S::kLeft:
    case S::kFailed:
    case S::kStopped: return false;
    }
    return false;
}

bool allowed(ReceiverState from, ReceiverState to) noexcept {
    using R = ReceiverState;
    if (from == to) return true;
    switch (from) {
    case R::kStreaming: return to == R::kEndArrived || to == R::kLeft || to == R::kFailed;
    case R::kEndArrived: return to == R::kEnded || to == R::kLeft || to == R::kFailed;
    // After the end, leave() only hangs up (the destructor's order).
    case R::kEnded: return to == R::kLeft;
    case R::kLeft:
    case R::kFailed: return false;
    }
    return false;
}

template <typename State>
static void step_checked(State& state, State to, const char* end) {
    if (!allowed(state, to)) {
        throw std::logic_error(fmt::format("{}: no transition from \"{}\" to \"{}\"", end, name(state), name(to)));
    }
    state = to;
}

void step(SenderState& state, SenderState to) { step_checked(state, to, "sender"); }
void step(ReceiverState& state, ReceiverState to) { step_checked(state, to, "receiver"); }

} // namespace rdmastream
