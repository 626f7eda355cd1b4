// SPDX-License-Identifier: LGPL-2.1-or-later
// How a stream end behaves: when the receiver holds every slot (the policy)
// and how it waits for its completions (the poll mode).
#pragma once

namespace rdmastream {

// What happens when the receiver holds every slot: lossless waits for a
// credit; live keeps the newest frame pending and drops the one that was
// pending before, so the stream stays live and the sender never stalls.
// Live is in force if either end asks for it.
enum class Policy { kLossless, kLive };

// kEvent sleeps on the completion channel until the NIC has something
// (a wake-up per batch, no CPU while idle); kBusy polls the completion queue
// without sleeping (one core spinning, the least latency).
enum class PollMode { kEvent, kBusy };

} // namespace rdmastream
