// SPDX-License-Identifier: LGPL-2.1-or-later
// The steps the active side (rc_connection.cpp) and the listener
// (listener.cpp) share on their way to a connection: name lookup, a fresh
// rdma_cm id, and the check that an id is on the device the user asked for.
#pragma once

#include "setup/cm_event_channel.hpp"
#include "setup/rc_connection.hpp"
#include "setup/verbs_owners.hpp"

#include <netdb.h>

#include <memory>
#include <string>

namespace rdmastream::detail {

struct AddrInfoDeleter {
    void operator()(addrinfo* ai) const noexcept { freeaddrinfo(ai); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// getaddrinfo for rdma_cm (`passive`: for binding; an empty host is every
// address). A name that does not resolve is a UserError.
AddrInfo lookup(const Endpoint& ep, bool passive);

// A new RDMA_PS_TCP id on `ch`.
CmId create_id(const CmEventChannel& ch);

// The device a resolved or requested id is on must be the one asked for
// (`want`; empty: any). Throws UserError naming both; `what` is the subject
// of the message ("the route to 198.18.0.2").
void check_id_device(const rdma_cm_id* id, const std::string& want, const char* what);

// "198.18.0.2:40123": the peer of a connected or requesting id, for messages.
std::string peer_text(rdma_cm_id* id);

} // namespace rdmastream::detail
