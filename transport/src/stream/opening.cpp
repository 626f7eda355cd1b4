// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/opening.hpp"

#include "setup/refuse_on_error.hpp"

#include <algorithm>

namespace rdmastream {

Opening make_opening(RcConnection conn, const OpeningPlan& plan) {
    Opening o;
    o.path = std::make_unique<VerbsDatapath>(std::move(conn), plan.poll_mode, plan.waker);
    o.handshake = std::make_unique<Handshake>(*o.path, plan.role, plan.slots, plan.key);
    return o;
}

void take_hello(Opening& o, const OpeningPlan& plan) {
    RcConnection& c = o.path->connection();
    o.handshake->take_peer_hello(c.peer_private_data(), c.peer_name());
    plan.check_slots(o.handshake->peer_slots());
}

void screen_hello(std::span<const std::byte> private_data, const std::string& peer, const OpeningPlan& plan) {
    plan.check_slots(Handshake::check_peer_hello(plan.role, plan.key != nullptr, private_data,
                                                 std::string("the ") + plan.peer_role + " " + peer));
}

std::optional<Opening> dial(const Endpoint& peer, std::chrono::milliseconds patience, const OpeningPlan& plan) {
    std::optional<Opening> dialled = connect_or_explain_refusal(peer, plan.peer_role, [&] {
        return retry_connect(peer, patience, plan.waker, [&] {
            Opening fresh = make_opening(RcConnection::resolve(peer, plan.queues), plan);
            fresh.path->connection().connect(fresh.handshake->hello());
            return fresh;
        });
    });
    if (!dialled) {
        return std::nullopt; // woken between two tries
    }
    try {
        take_hello(*dialled, plan);
        dialled->handshake->run(Handshake::kPatience);
    } catch (const std::exception&) {
        dialled->path->disconnect(); // too late to reject: the peer sees a disconnect
        throw;
    }
    return dialled;
}

Opening accept_next_peer(Listener& listener, std::chrono::milliseconds timeout,
                         std::chrono::milliseconds handshake_timeout, const OpeningPlan& plan) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        Opening o = make_opening(listener.wait_request(plan.queues, std::max(left, std::chrono::milliseconds(0)),
                                                       [&](std::span<const std::byte> hello, const std::string& peer) {
                                                           screen_hello(hello, peer, plan);
                                                       }),
                                 plan);
        RcConnection& c = o.path->connection();
        check_or_refuse(c, [&] { take_hello(o, plan); }); // screened already: cannot fail
        if (!listener.complete(c, o.handshake->hello())) {
            continue;
        }
        try {
            o.handshake->run(handshake_timeout);
        } catch (const std::exception& e) {
            listener.log_refusal(c.peer_name(), e.what());
            o.path->disconnect(); // too late to reject: the peer sees a disconnect
            continue;
        }
        return o;
    }
}

} // namespace rdmastream
