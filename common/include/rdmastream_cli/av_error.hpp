// SPDX-License-Identifier: LGPL-2.1-or-later
// FFmpeg error codes as text, and the exception that carries them.
#pragma once

#include <stdexcept>
#include <string>

namespace rdmastream::cli {

// av_err2str as a std::string (the macro needs a compound literal, not C++).
std::string av_error_text(int err);

// A libav* call failed: names the call, what it worked on, and FFmpeg's reason.
class MediaError : public std::runtime_error {
public:
    MediaError(const std::string& call, int err, const std::string& context);
    int error_code() const noexcept { return err_; }

private:
    int err_;
};

// Throws MediaError when `rc` is negative; returns it otherwise.
int check_av(int rc, const char* call, const std::string& context);

} // namespace rdmastream::cli
