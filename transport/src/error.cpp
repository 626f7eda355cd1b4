// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace rdmastream {

namespace {
std::string describe(const std::string& call, int err, const std::string& context) {
    if (err == 0) { // a call that sets no errno: the context says what it returned
        return context.empty() ? call + " failed" : fmt::format("{} failed ({})", call, context);
    }
    std::string msg = fmt::format("{} failed: {} (errno {})", call, std::strerror(err), err);
    if (!context.empty()) {
        msg += ": " + context;
    }
    return msg;
}
} // namespace

SystemError::SystemError(std::string call, int err, const std::string& context)
    : std::runtime_error(describe(call, err, context)), call_(std::move(call)), err_(err) {}

void check_rc(int rc, const char* call) {
    if (rc != 0) {
        throw SystemError(call, rc);
    }
}

void check_errno(int rc, const char* call) {
    if (rc != 0) {
        throw SystemError(call, errno);
    }
}

} // namespace rdmastream
