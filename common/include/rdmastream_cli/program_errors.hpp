// SPDX-License-Identifier: LGPL-2.1-or-later
// How both programs end on an error: one line on stderr naming the program,
// and an exit status a script can tell apart (2: the user can fix it, e.g. a
// flag, a file, a limit; 1: it failed while running).
#pragma once

#include "rdmastream/error.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

namespace rdmastream::cli {

// What main returns when app.parse threw. --help and --version come as
// "errors" of status 0: CLI11 prints them. A flag CLI11 refused (unknown,
// missing, out of range) is the user's to fix like any other, so 2, not
// CLI11's own 105, 106...: its message, the usage line and where to look,
// on stderr.
int parse_error_status(const CLI::App& app, const CLI::ParseError& e);

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
