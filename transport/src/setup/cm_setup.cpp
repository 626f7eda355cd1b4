// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/cm_setup.hpp"

#include "rdmastream/allow_list.hpp"
#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

namespace rdmastream::detail {

AddrInfo lookup(const Endpoint& ep, bool passive) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(ep.port);
    const int rc = getaddrinfo(ep.host.empty() ? nullptr : ep.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
        throw UserError(fmt::format("cannot resolve '{}': {}", ep.host, gai_strerror(rc)));
    }
    return AddrInfo(res);
}

CmId create_id(const CmEventChannel& ch) {
    rdma_cm_id* id = nullptr;
    check_errno(rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP), "rdma_create_id");
    return CmId(id);
}

void check_id_device(const rdma_cm_id* id, const std::string& want, const char* what) {
    if (want.empty() || id->verbs == nullptr) {
        return;
    }
    const std::string got = ibv_get_device_name(id->verbs->device);
    if (got != want) {
        throw UserError(fmt::format("{} goes through RDMA device {}, not {}: use an address on {} (see `rdma link "
                                    "show`), or drop the device option",
                                    what, got, want, want));
    }
}

std::string peer_text(rdma_cm_id* id) {
    return fmt::format("{}:{}", address_text(rdma_get_peer_addr(id)), ntohs(rdma_get_dst_port(id)));
}

} // namespace rdmastream::detail
