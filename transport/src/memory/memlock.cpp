// SPDX-License-Identifier: LGPL-2.1-or-later
// RLIMIT_MEMLOCK check before registration: the kernel pins registered pages
// against this limit and the driver's ENOMEM does not say so.
#include "rdmastream/error.hpp"
#include "memory/registered_region.hpp"

#include <sys/resource.h>

#include <fstream>
#include <string>

#include <fmt/format.h>

namespace rdmastream {

namespace {
// CAP_IPC_LOCK lifts the limit (root normally has it).
bool has_cap_ipc_lock() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("CapEff:", 0) == 0) {
            const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
            constexpr int kCapIpcLock = 14;
            return (caps >> kCapIpcLock) & 1u;
        }
    }
    return false;
}
} // namespace

void check_memlock(std::size_t bytes) {
    rlimit lim{};
    if (getrlimit(RLIMIT_MEMLOCK, &lim) != 0) {
        throw SystemError("getrlimit(RLIMIT_MEMLOCK)", errno);
    }
    if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= bytes || has_cap_ipc_lock()) {
        return;
    }
    throw UserError(fmt::format(
        "registering {:.1f} MiB of memory needs a locked-memory limit at least that large, but "
        "RLIMIT_MEMLOCK is {:.1f} MiB: run `ulimit -l unlimited` (or set `memlock` in "
        "/etc/security/limits.conf), or use fewer/smaller slots",
        static_cast<double>(bytes) / 1048576.0, static_cast<double>(lim.rlim_cur) / 1048576.0));
}

} // namespace rdmastream
