// SPDX-License-Identifier: LGPL-2.1-or-later
// FrameSender's signal that its receiver left on purpose, inside the
// library only: the public Sender turns it into its state (kLeft) and
// leaving(), since an ending is no error (error.hpp).
#pragma once

#include <stdexcept>

namespace rdmastream {

// The receiver said it has every frame it wants (wire::Control::kLeaving)
// and hangs up: the stream's end, not a failure. A sender's frames up to
// that moment were delivered or are simply not wanted; none was lost. The
// message says so, naming the receiver and the frames sent.
class PeerLeft : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace rdmastream
