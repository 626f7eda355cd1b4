// SPDX-License-Identifier: LGPL-2.1-or-later
#include "datapath/datapath.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"

#include <arpa/inet.h>

namespace rdmastream {

void Datapath::post_control(wire::Control kind, const RegisteredRegion& from, std::size_t size, std::uint64_t wr_id,
                            const char* what) {
    ibv_sge sge{from.addr(), static_cast<std::uint32_t>(size), from.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = size != 0 ? &sge : nullptr;
    wr.num_sge = size != 0 ? 1 : 0;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(wire::encode(kind));
    wr.send_flags = IBV_SEND_SIGNALED;
    post_send(wr, what);
}

VerbsDatapath::VerbsDatapath(RcConnection conn, PollMode mode, Waker* waker)
    : conn_(std::move(conn)), poller_(conn_, mode, waker) {}

RegisteredRegion Datapath::register_memory(std::size_t size, int access) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    PageMapping pages(size);
    PageRegistration registration = register_pages(pages.bytes(), pages.length(), access);
    return RegisteredRegion(std::move(pages), std::move(registration));
}

PageRegistration VerbsDatapath::register_pages(std::span<std::byte> pages, std::size_t locked, int access) {
    return rdmastream::register_pages(conn_.shared_pd(), pages, locked, access);
}

void VerbsDatapath::post_send(ibv_send_wr& wr, const char* what) {
    ibv_send_wr* bad = nullptr;
    check_rc(ibv_post_send(conn_.qp(), &wr, &bad), what);
}

void VerbsDatapath::post_recv(ibv_recv_wr& list, const char* what) {
    ibv_recv_wr* bad = nullptr;
    check_rc(ibv_post_recv(conn_.qp(), &list, &bad), what);
}

std::optional<CmEvent> VerbsDatapath::next_event() { return conn_.events().next(std::chrono::milliseconds(0)); }

} // namespace rdmastream
