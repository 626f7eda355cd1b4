// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rogue_receiver.hpp"

#include "datapath/completion_poller.hpp"
#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "memory/registered_region.hpp"
#include "wire/wire.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>

namespace rdmastream::check {

namespace {

void say(const std::string& line) {
    std::printf("rogue-receiver: %s\n", line.c_str());
    std::fflush(stdout);
}

// One SEND from `out`'s first `size` bytes, signalled, with the immediate
// `imm` (host order) or, when `with_imm` is false, none at all.
void post_send(RcConnection& conn, const RegisteredRegion& out, std::size_t size, bool with_imm, std::uint32_t imm) {
    ibv_sge sge{out.addr(), static_cast<std::uint32_t>(size), out.lkey()};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = size > 0 ? 1 : 0;
    wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr.imm_data = htonl(imm);
    wr.send_flags = IBV_SEND_SIGNALED;
    check_rc(ibv_post_send(conn.qp(), &wr, &bad), "ibv_post_send(rogue)");
}

// A credit for `imm`, carrying the ring's rkey (this rogue's ring has no
// memory windows).
void send_credits(RcConnection& conn, const RegisteredRegion& out, wire::SlotImm imm, std::uint32_t rkey) {
    const wire::Credit credit{imm, rkey};
    const std::size_t n = wire::encode_credits({&credit, 1}, out.bytes());
    post_send(conn, out, n, true, wire::encode(wire::Control::kCredits));
}

} // namespace

int run_rogue_receiver(const Endpoint& local, const std::string& fault, std::uint32_t slots,
                       std::uint32_t slot_size, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds idle_timeout) {
    Listener listener(local);
    say(fmt::format("listening on {}:{}, {} slots of {} bytes; fault '{}'", local.host, listener.port(), slots,
                    slot_size, fault));
    ConnectionOptions copts;
    copts.recv_wr = slots + 1;
    copts.send_wr = 64;
    RcConnection conn = listener.wait_request(copts, connect_timeout);
    // Protocol 4, no key: the sender's hello in its request, ours in the
    // accept, then the ring advert as our first message (solicited: the
    // handshake's last step). The faults come after it.
    const wire::SenderHello their_hello = wire::decode_sender_hello(conn.peer_private_data());
    if (their_hello.has_key) {
        throw std::runtime_error("rogue-receiver: the sender has a key; this rogue speaks protocol 4 without one");
    }
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    RegisteredRegion ring(conn.pd(), std::size_t{slots} * slot_size, access);
    RegisteredRegion other_ring(conn.pd(), std::size_t{slots} * slot_size, access); // for ring-advert
    RegisteredRegion control_in(conn.pd(), std::size_t{slots + 1} * wire::kControlPayloadMax,
                                IBV_ACCESS_LOCAL_WRITE);
    RegisteredRegion advert_out(conn.pd(), wire::kRingAdvertSize, IBV_ACCESS_LOCAL_WRITE); // the solicited one
    RegisteredRegion out(conn.pd(), 4096, IBV_ACCESS_LOCAL_WRITE);
    const auto post_recv = [&](std::uint64_t i) {
        ibv_sge sge{control_in.addr() + i * wire::kControlPayloadMax,
                    static_cast<std::uint32_t>(wire::kControlPayloadMax), control_in.lkey()};
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        wr.wr_id = i;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        check_rc(ibv_post_recv(conn.qp(), &wr, &bad), "ibv_post_recv");
    };
    for (std::uint32_t i = 0; i <= slots; ++i) post_recv(i);
    conn.accept(wire::encode(wire::ReceiverHello{slots, false, {}}));
    say(fmt::format("sender {} connected", conn.peer_name()));
    const auto advert = wire::encode(wire::RingAdvert{slots, slot_size, ring.addr(), ring.rkey(), false});
    std::copy(advert.begin(), advert.end(), advert_out.bytes().begin());
    post_send(conn, advert_out, advert.size(), true, wire::encode(wire::Control::kRing));

    // The faults that need no frame first.
    if (fault == "early-credits") {
        send_credits(conn, out, {0, 0}, ring.rkey());
        say("sent a credit for slot 0 before any frame");
    } else if (fault == "ring-advert") {
        // A second advert: the first (the handshake's) was asked for, this
        // one answers no format.
        const auto second = wire::encode(wire::RingAdvert{slots, slot_size, other_ring.addr(), other_ring.rkey(), false});
        std::copy(second.begin(), second.end(), out.bytes().begin());
        post_send(conn, out, second.size(), true, wire::encode(wire::Control::kRing));
        say("sent a second ring advert nobody asked for");
    } else if (fault == "no-imm") {
        const wire::Credit credit{{0, 0}, ring.rkey()}; // a credit's bytes, but no immediate
        wire::encode_credits({&credit, 1}, out.bytes());
        post_send(conn, out, wire::kCreditSize, false, 0);
        say("sent a SEND without an immediate");
    } else if (fault == "oversized") {
        std::fill(out.bytes().begin(), out.bytes().end(), std::byte{0});
        post_send(conn, out, out.bytes().size(), true, wire::encode(wire::Control::kCredits));
        say(fmt::format("sent a {}-byte credits message", out.bytes().size()));
    }

    CompletionPoller poller(conn);
    std::array<ibv_wc, 16> wcs{};
    std::uint64_t frames = 0;
    for (;;) {
        const Waited w = poller.wait(wcs, idle_timeout);
        if (w.event) {
            say(fmt::format("the sender hung up after {} frames: {}", frames, describe(*w.event)));
            return 0;
        }
        if (w.completions == 0) {
            say(fmt::format("the sender neither refused nor hung up within {} ms", idle_timeout.count()));
            return 1;
        }
        for (std::size_t i = 0; i < w.completions; ++i) {
            const ibv_wc& wc = wcs[i];
            if (wc.status != IBV_WC_SUCCESS) { // our own fault coming back (then the flushes after it)
                if (wc.status != IBV_WC_WR_FLUSH_ERR) say(fmt::format("work completion failed: {}", describe_failed_wc(wc)));
                continue;
            }
            if (wc.opcode == IBV_WC_SEND) continue;
            post_recv(wc.wr_id); // a frame or a control message: the receive goes back, no credit
            if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) continue;
            if (++frames == 1 && fault == "never-given") {
                send_credits(conn, out, {static_cast<std::uint16_t>(slots - 1), 1}, ring.rkey());
                say(fmt::format("sent a credit for slot {}, which no frame used", slots - 1));
            }
        }
    }
}

} // namespace rdmastream::check
