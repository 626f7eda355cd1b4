#include "rdmastream/datapath.hpp"

#include "rdmastream/error.hpp"

namespace rdmastream {

VerbsDatapath::VerbsDatapath(RcConnection conn, PollMode mode, Waker* waker)
    : conn_(std::move(conn)), poller_(conn_, mode, waker) {}

RegisteredRegion VerbsDatapath::register_memory(std::size_t size, int access) {
    return RegisteredRegion(conn_.pd(), size, access);
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
