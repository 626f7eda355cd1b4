// SPDX-License-Identifier: LGPL-2.1-or-later
// rdma-rogue-peer: one misbehaving peer at a listening rdmastream end, for
// the tests that prove a listener refuses it, logs one line naming it and
// serves the next peer. Role-agnostic modes work at the rdma_cm level
// (the protocol-level misbehaviour after a good handshake is the rogue
// receiver's and rdma-ring-check's rogue sender's):
//
//   garbage      private data that is no hello
//   bad-hello    a well-formed sender hello (--as sender) or receiver hello
//                (--as receiver) of another protocol version
//   half-open    a connect request answered by the listener, then nothing:
//                the rogue never reads the CM's reply, so never sends the RTU
//   abandon      a connect request, then the rogue's id is gone at once (a
//                stale request at the listener)
//   flood        --count half-open connect requests at once (from --from, if
//                given), each with a good hello, held for --hold seconds: the
//                flood a listener must not let lock a genuine peer out
//   silent       (--as sender) a good handshake (protocol 4: hellos, the
//                receiver's ring advert), then nothing at all
//   mute-key     (--as sender) a hello that claims a key, the connection
//                established, then no key proof (at a receiver with a key)
//   bad-format   (--as sender) a good handshake, then a format with caps
//                nobody can use (a range, not fixed), then one frame
//   probe        a good hello (either role) that expects to be refused (a busy
//                listener): prints the refusal, fails if it got in
//   forged-join  (--as sender) a well-formed join of a second path (protocol
//                7), claiming a key, whose session token names no stream:
//                expects to be refused at its connect request, as probe does
//
// Exits 0 once it has misbehaved as asked (the listener's reaction is what
// the tests check), non-zero when it could not even try.
#include "rdmastream/error.hpp"
#include "call_checks.hpp"
#include "stream/frame_sender.hpp"
#include "memory/registered_region.hpp"
#include "setup/verbs_owners.hpp"
#include "wire/wire.hpp"

#include <CLI/CLI.hpp>
#include <netdb.h>

#include <chrono>
#include <cstdio>
#include <thread>

using namespace rdmastream;

namespace {

// The private data each mode opens with.
std::vector<std::byte> opening(const std::string& mode, bool as_sender) {
    std::vector<std::byte> data;
    if (mode == "garbage") {
        for (int i = 0; i < 40; ++i) data.push_back(static_cast<std::byte>(0xa5 ^ (i * 37)));
        return data;
    }
    // Protocol 4 hellos, no key (a zero nonce: no key, so no proof binds it).
    if (as_sender) {
        const auto hello = wire::encode(wire::SenderHello{256, false, {}});
        data.assign(hello.begin(), hello.end());
    } else {
        // A plausible ring's slot count; its address and rkey would come
        // only after the handshake, which these modes never reach.
        const auto hello = wire::encode(wire::ReceiverHello{4, false, {}});
        data.assign(hello.begin(), hello.end());
    }
    if (mode == "bad-hello") data[4] = std::byte{99}; // version 99
    if (mode == "forged-join") { // a key claimed, and a token guessed: 8 bytes no stream derived
        wire::HelloJoin join{true, true, wire::SessionToken{}};
        join.token->fill(std::byte{0x5a});
        wire::Nonce nonce{};
        nonce.fill(std::byte{0x6a});
        const auto hello = wire::encode(wire::SenderHello{256, true, nonce, join});
        data.assign(hello.begin(), hello.end());
    }
    if (mode == "mute-key") { // a key claimed, with a nonce that is not zero
        wire::Nonce nonce{};
        nonce.fill(std::byte{0x6b});
        const auto hello = wire::encode(wire::SenderHello{256, true, nonce});
        data.assign(hello.begin(), hello.end());
    }
    return data;
}

// A connect request sent by hand, on its own event channel, which nobody
// reads: the listener's answer stays unread, so no RTU ever goes (members
// die in reverse: QP, id, channel).
struct RawRequest {
    EventChannel ch;
    CmId id;
    CmQueuePair qp;
};

// half-open, abandon and flood: raw rdma_cm, to stop where a correct peer
// never does. `from`: the source address ("" : the route's).
std::unique_ptr<RawRequest> raw_request(const Endpoint& peer, const std::string& from, bool as_sender) {
    auto r = std::make_unique<RawRequest>();
    r->ch.reset(rdma_create_event_channel());
    if (!r->ch) throw SystemError("rdma_create_event_channel", errno);
    rdma_cm_id* raw = nullptr;
    check_errno(rdma_create_id(r->ch.get(), &raw, nullptr, RDMA_PS_TCP), "rdma_create_id");
    r->id.reset(raw);
    const auto resolve = [](const std::string& host, std::uint16_t port) {
        addrinfo* ai = nullptr;
        if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), nullptr, &ai) != 0) {
            throw UserError("cannot resolve " + host);
        }
        return std::unique_ptr<addrinfo, void (*)(addrinfo*)>(ai, freeaddrinfo);
    };
    const auto dst = resolve(peer.host, peer.port);
    const auto src = from.empty() ? decltype(dst)(nullptr, freeaddrinfo) : resolve(from, 0);
    check_errno(rdma_resolve_addr(r->id.get(), src ? src->ai_addr : nullptr, dst->ai_addr, 5000),
                "rdma_resolve_addr");
    const auto expect = [&](rdma_cm_event_type want) {
        rdma_cm_event* ev = nullptr;
        check_errno(rdma_get_cm_event(r->ch.get(), &ev), "rdma_get_cm_event");
        const auto got = ev->event;
        rdma_ack_cm_event(ev);
        if (got != want) throw std::runtime_error(std::string("rogue: got ") + rdma_event_str(got));
    };
    expect(RDMA_CM_EVENT_ADDR_RESOLVED);
    check_errno(rdma_resolve_route(r->id.get(), 5000), "rdma_resolve_route");
    expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    check_errno(rdma_create_qp(r->id.get(), nullptr, &qa), "rdma_create_qp");
    r->qp = CmQueuePair(r->id.get());
    const auto data = opening("ok", as_sender);
    rdma_conn_param p{};
    p.private_data = data.data();
    p.private_data_len = static_cast<std::uint8_t>(data.size());
    p.responder_resources = p.initiator_depth = 1;
    p.retry_count = p.rnr_retry_count = 6;
    check_errno(rdma_connect(r->id.get(), &p), "rdma_connect");
    return r;
}

// silent and bad-format: a real sender that then misbehaves.
void as_bad_sender(const Endpoint& peer, const std::string& mode, std::chrono::seconds hold) {
    SenderOptions so;
    auto tx = FrameSender::connect(peer, so, std::chrono::seconds(30));
    std::printf("rogue-peer: %s: connected\n", mode.c_str());
    std::fflush(stdout);
    if (mode == "silent") {
        std::this_thread::sleep_for(hold); // no keepalive, no format, no frame
        return;
    }
    RegisteredRegion frame(tx->pd(), 4096, IBV_ACCESS_LOCAL_WRITE);
    wire::StreamFormat f;
    f.id = 1;
    f.max_frame_size = 1024;
    f.caps = "video/x-raw,format=GRAY8,width=[ 16, 64 ],height=16,framerate=30/1";
    try {
        tx->set_format(f, std::chrono::seconds(10));
        tx->send(frame.bytes().first(256), frame.lkey(), FrameMeta{}, 0, std::chrono::seconds(10));
        tx->finish(std::chrono::seconds(std::max<long>(1, hold.count())));
    } catch (const std::exception& e) {
        std::printf("rogue-peer: bad-format: the listener hung up: %s\n", e.what()); // as it should
    }
}

} // namespace

int main(int argc, char** argv) {
    std::string connect, mode, as = "sender", from;
    int hold_s = 20, count = 64;
    CLI::App app{"rdma-rogue-peer: one misbehaving peer at a listening rdmastream end (tests)"};
    app.add_option("--connect", connect, "the listener, ADDR[:PORT]")->required();
    app.add_option("--mode", mode,
                   "garbage, bad-hello, half-open, abandon, flood, silent, mute-key, bad-format, probe, forged-join")
        ->required()
        ->check(CLI::IsMember({"garbage", "bad-hello", "half-open", "abandon", "flood", "silent", "mute-key",
                               "bad-format", "probe", "forged-join"}));
    app.add_option("--count", count, "flood: how many connect requests")->check(CLI::Range(1, 4096));
    app.add_option("--from", from, "half-open, abandon, flood: the source address (default: the route's)");
    app.add_option("--as", as, "the role it claims: sender (at a receiver) or receiver (at a sender)")
        ->check(CLI::IsMember({"sender", "receiver"}));
    app.add_option("--hold", hold_s, "seconds to stay (half-open, flood, silent, mute-key)");
    CLI11_PARSE(app, argc, argv);
    try {
        const Endpoint peer = parse_endpoint(connect);
        const bool as_sender = as == "sender";
        if (mode == "silent" || mode == "bad-format") {
            if (!as_sender) throw UserError("--mode " + mode + " is a sender's misbehaviour: --as sender");
            as_bad_sender(peer, mode, std::chrono::seconds(hold_s));
        } else if (mode == "half-open" || mode == "abandon") {
            auto r = raw_request(peer, from, as_sender);
            std::printf("rogue-peer: %s: connect request sent\n", mode.c_str());
            std::fflush(stdout);
            // abandon: the id and QP go now, with the request still at the listener.
            if (mode == "half-open") std::this_thread::sleep_for(std::chrono::seconds(hold_s));
        } else if (mode == "flood") {
            std::vector<std::unique_ptr<RawRequest>> flood;
            for (int i = 0; i < count; ++i) flood.push_back(raw_request(peer, from, as_sender));
            std::printf("rogue-peer: flood: %d connect requests sent%s%s, held for %d s\n", count,
                        from.empty() ? "" : " from ", from.c_str(), hold_s);
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::seconds(hold_s));
        } else if (mode == "mute-key") {
            if (!as_sender) throw UserError("--mode mute-key is a sender's misbehaviour: --as sender");
            auto c = connect_with_retry(peer, ConnectionOptions{}, std::chrono::seconds(30), opening(mode, true));
            std::printf("rogue-peer: mute-key: connected, proving nothing\n");
            std::fflush(stdout);
            // Until the listener hangs up on it (its handshake timeout), or
            // --hold at the most: a test's next step need not wait out the hold.
            if (const auto ev = c.events().next(std::chrono::seconds(hold_s))) {
                std::printf("rogue-peer: mute-key: the listener ended it (%s)\n", rdma_event_str(ev->type));
            }
        } else {
            // garbage / bad-hello / probe / forged-join: the listener must refuse the request.
            const auto data = opening(mode, as_sender);
            ConnectionOptions co;
            try {
                auto c = connect_with_retry(peer, co, std::chrono::seconds(30), data);
                std::printf("rogue-peer: %s: FAIL: the listener accepted it\n", mode.c_str());
                return 1;
            } catch (const CmEventError& e) {
                const auto why = e.event() ? wire::decode_reject(e.event()->private_bytes()) : std::nullopt;
                std::printf("rogue-peer: %s: refused: %s\n", mode.c_str(), why ? why->text.c_str() : e.what());
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rogue-peer: %s\n", e.what());
        return 2;
    }
    return 0;
}
