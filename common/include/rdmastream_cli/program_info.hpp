// SPDX-License-Identifier: LGPL-2.1-or-later
// What both programs say about themselves: --version, in the form help2man
// reads (the man pages are made from --help and --version, packaging/).
#pragma once

#include <CLI/CLI.hpp>

namespace rdmastream::cli {

// The project's version (CMakeLists.txt's project() VERSION), e.g. "0.1.0".
const char* version();

// Adds --version: prints "NAME VERSION" (NAME: the app's name) and exits 0.
void add_version_flag(CLI::App& app);

} // namespace rdmastream::cli
