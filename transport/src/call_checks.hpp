// SPDX-License-Identifier: LGPL-2.1-or-later
// verbs and rdma_cm report failures in three conventions; one helper each
// turns them into a SystemError naming the call and errno's text (the model
// is rdmapp's error.h).
#pragma once

#include "rdmastream/error.hpp"

#include <cerrno>

namespace rdmastream {

// ibv_reg_mr & co: NULL on failure, errno set.
template <typename T>
T* check_ptr(T* p, const char* call) {
    if (p == nullptr) {
        throw SystemError(call, errno);
    }
    return p;
}

// ibv_post_send & co: 0 or the errno value itself.
void check_rc(int rc, const char* call);

// rdma_connect & co: 0 or -1 with errno set.
void check_errno(int rc, const char* call);

} // namespace rdmastream
