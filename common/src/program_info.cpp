// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/program_info.hpp"

#include <string>

namespace rdmastream::cli {

const char* version() { return RDMASTREAM_VERSION; }

void add_version_flag(CLI::App& app) {
    app.set_version_flag("--version", app.get_name() + " " + version(), "print the program's version and exit");
}

} // namespace rdmastream::cli
