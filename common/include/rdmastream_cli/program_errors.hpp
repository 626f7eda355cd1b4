// SPDX-License-Identifier: LGPL-2.1-or-later
// How both programs end on an error: one line on stderr naming the program,
// and an exit status a script can tell apart (2: the user can fix it, e.g. a
// flag, a file, a limit; 1: it failed while running).
#pragma once

#include "rdmastream/error.hpp"

#include <cstdio>
#include <exception>

namespace rdmastream::cli {

template <typename Body>
int exit_status_of(const char* program, Body&& body) {
    try {
        return body();
    } catch (const UserError& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", program, e.what());
        return 1;
    }
}

} // namespace rdmastream::cli
