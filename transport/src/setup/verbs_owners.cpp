// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/verbs_owners.hpp"

#include <cstdio>
#include <cstring>

namespace rdmastream::detail {

void report_destroy_failure(const char* call, int rc) noexcept {
    std::fprintf(stderr, "rdmastream: %s failed: %s (a child object is still alive)\n", call, std::strerror(rc));
}

} // namespace rdmastream::detail
