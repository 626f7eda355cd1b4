// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/fork_safety.hpp"

#include "rdmastream/error.hpp"

#include <infiniband/verbs.h>

namespace rdmastream {

void enable_fork_safety() {
    // Once per process: ibv_fork_init itself may be called again, but a
    // failure is the same failure every time.
    static const int rc = [] {
        if (ibv_is_fork_initialized() == IBV_FORK_UNNEEDED) return 0; // the kernel copes
        return ibv_fork_init();
    }();
    if (rc != 0) {
        throw SystemError("ibv_fork_init", rc,
                          rc == EINVAL ? "call enable_fork_safety() before the first RDMA connection or registration"
                                       : "");
    }
}

} // namespace rdmastream
