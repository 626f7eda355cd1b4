// SPDX-License-Identifier: LGPL-2.1-or-later
// How rdmasend opens its Sender: through a Door that dials the receiver or
// listens for it (--allow), or for several (--receivers: a fan-out), with
// the lines it prints around the wait. Refusals, "busy" answers and the
// streaming itself are the transport's (rdmastream/sender.hpp).
#pragma once

#include "rdmastream_cli/connection_flags.hpp"

#include "rdmastream/sender.hpp"

#include <memory>

namespace rdmastream::cli {

// Dials plan.endpoint, or listens on it for one receiver or, with
// config.receivers, for that many; refused peers are logged as "rdmasend:
// refused ...". nullptr when config.waker (Ctrl-C) ended the wait.
std::unique_ptr<Sender> open_sender(const ConnectionPlan& plan, AllowList allow, SenderConfig config);

} // namespace rdmastream::cli
