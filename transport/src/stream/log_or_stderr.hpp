// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a stream end's lines go (a fan-out's joins, each path's loss and
// return): the caller's log, or else stderr as "rdmastream: LINE".
#pragma once

#include <cstdio>
#include <functional>
#include <string>

namespace rdmastream {

using LogFn = std::function<void(const std::string&)>;

inline LogFn log_or_stderr(LogFn log) {
    if (log) return log;
    return [](const std::string& line) { std::fprintf(stderr, "rdmastream: %s\n", line.c_str()); };
}

} // namespace rdmastream
