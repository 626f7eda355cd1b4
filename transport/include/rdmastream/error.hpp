// SPDX-License-Identifier: LGPL-2.1-or-later
// Errors of the transport library.
//
// Five kinds, kept apart so that callers can tell the user the right thing:
//  - SystemError: a library or kernel call failed; carries the call and errno
//                 (0 for a call that reports no errno, as ibv_poll_cq).
//  - UserError:   something the user can change (a flag, a limit, a setup step);
//                 the message says what to change.
//  - TimeoutError: nothing came within the caller's timeout.
//  - ProtocolError: a peer sent something we refuse (bad handshake, bad
//                 immediate, bad header). Everything off the wire is untrusted.
//  - ConnectionError: the connection failed under a stream: the peer went
//                 away without ending it, a work completion failed, the
//                 device or its port went, or the peer stopped acknowledging.
// A stream's endings are no error: a receiver that left on purpose, an
// ended stream and a stopped one are what the end's state() says.
#pragma once

#include <stdexcept>
#include <string>

namespace rdmastream {

class SystemError : public std::runtime_error {
public:
    // `err` 0: the call set no errno; `context` then says what it returned.
    SystemError(std::string call, int err, const std::string& context = {});
    const std::string& call() const noexcept { return call_; }
    int error_code() const noexcept { return err_; }

private:
    std::string call_;
    int err_;
};

class UserError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Waited and nothing came: no credit, no frame within the caller's timeout.
// The real timeout and nothing else (waits are interrupted by a Waker, not
// by slicing them): the caller gives up, or reports the peer stuck.
class TimeoutError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The connection failed: the peer hung up or died without ending the
// stream, a work completion failed (the message names its status, with
// ibv_wc_status_str, and the device event behind it), the device or its
// port went, or the peer's NIC stopped acknowledging. Also what a stream
// end's calls throw once it has failed, whatever failed it.
class ConnectionError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace rdmastream
