// Passive side of the handshake: run a check on a connection request and,
// if it fails, refuse the request with the reason (so the peer can print it
// instead of timing out), then let the error go on to our caller.
#pragma once

#include "rdmastream/error.hpp"
#include "rdmastream/rc_connection.hpp"
#include "rdmastream/wire.hpp"

namespace rdmastream {

template <typename Check>
void check_or_refuse(RcConnection& conn, Check&& check) {
    try {
        check();
    } catch (const ProtocolError& e) {
        conn.reject(wire::encode(wire::Reject{wire::RejectReason::kProtocol, e.what()}));
        throw;
    } catch (const UserError& e) {
        conn.reject(wire::encode(wire::Reject{wire::RejectReason::kConfig, e.what()}));
        throw;
    }
}

} // namespace rdmastream
