// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/program_errors.hpp"

#include <string>

namespace rdmastream::cli {

int parse_error_status(const CLI::App& app, const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    const std::string& name = app.get_name();
    // --help's usage line ("Usage: NAME [OPTIONS] ..."), its newline included.
    const std::string usage = CLI::Formatter{}.make_usage(&app, name);
    std::fprintf(stderr, "%s: %s\n%stry: %s --help\n", name.c_str(), e.what(), usage.c_str(), name.c_str());
    return 2;
}

} // namespace rdmastream::cli
