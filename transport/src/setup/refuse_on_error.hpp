// SPDX-License-Identifier: LGPL-2.1-or-later
// Both sides of a refusal. Passive: run a check on a connection request and,
// if it fails, refuse the request with the reason (so the peer can print it
// instead of timing out), then let the error go on to our caller. Active:
// turn such a refusal into an error that quotes the peer's reason.
#pragma once

#include "setup/cm_event_channel.hpp"
#include "rdmastream/error.hpp"
#include "setup/rc_connection.hpp"
#include "wire/wire.hpp"

#include <fmt/format.h>

#include <string_view>

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

// Connects with `connect()`; a refusal that carries our reject message
// becomes a UserError quoting it (`who`: "receiver" or "sender").
template <typename Connect>
auto connect_or_explain_refusal(const Endpoint& peer, std::string_view who, Connect&& connect) {
    try {
        return connect();
    } catch (const CmEventError& e) {
        if (e.event() && e.event()->type == RDMA_CM_EVENT_REJECTED) {
            if (const auto why = wire::decode_reject(e.event()->private_bytes())) {
                throw UserError(
                    fmt::format("the {} at {}:{} refused the connection: {}", who, peer.host, peer.port, why->text));
            }
        }
        throw;
    }
}

} // namespace rdmastream
