// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/opening.hpp"

#include "setup/refuse_on_error.hpp"
#include "stream/pending_peers.hpp"

#include <fmt/format.h>

namespace rdmastream {

Opening make_opening(RcConnection conn, const OpeningPlan& plan) { return make_opening(std::move(conn), plan, plan.join); }

Opening make_opening(RcConnection conn, const OpeningPlan& plan, const std::optional<Handshake::Join>& join) {
    Opening o;
    o.path = std::make_unique<VerbsDatapath>(std::move(conn), plan.poll_mode, plan.waker);
    o.handshake = join ? std::make_unique<Handshake>(*o.path, plan.role, plan.slots, plan.key, *join)
                       : std::make_unique<Handshake>(*o.path, plan.role, plan.slots, plan.key);
    return o;
}

void take_hello(Opening& o, const OpeningPlan& plan) {
    RcConnection& c = o.path->connection();
    o.handshake->take_peer_hello(c.peer_private_data(), c.peer_name());
    plan.check_slots(o.handshake->peer_slots());
}

std::optional<Handshake::Join> screen_hello(std::span<const std::byte> private_data, const std::string& peer,
                                            const OpeningPlan& plan) {
    const std::string label = std::string("the ") + plan.peer_role + " " + peer;
    const wire::Role peer_role = plan.role == wire::Role::kSender ? wire::Role::kReceiver : wire::Role::kSender;
    if (plan.joins_any != nullptr && wire::read_join(peer_role, private_data)) {
        const Handshake::ScreenedJoin j =
            Handshake::screen_join(plan.role, plan.key != nullptr, *plan.joins_any, private_data, label);
        plan.check_slots(j.peer_slots);
        return Handshake::Join{j.secret, j.path_b, false, {}};
    }
    if (!plan.joins) {
        plan.check_slots(Handshake::check_peer_hello(plan.role, plan.key != nullptr, private_data, label));
        return std::nullopt;
    }
    const Handshake::ScreenedJoin j = Handshake::screen_join(plan.role, plan.key != nullptr,
                                                             std::span(&plan.joins, 1), private_data, label);
    plan.check_slots(j.peer_slots);
    return Handshake::Join{j.secret, j.path_b, false, {}};
}

std::optional<Opening> dial(const Endpoint& peer, std::chrono::milliseconds patience, const OpeningPlan& plan) {
    std::optional<Opening> dialled = connect_or_explain_refusal(peer, plan.peer_role, [&] {
        return retry_connect(peer, patience, plan.waker, [&](std::chrono::milliseconds left) {
            Opening fresh = make_opening(RcConnection::resolve(peer, within(plan.queues, left)), plan);
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

std::optional<Opening> accept_next_peer(Listener& listener, std::chrono::steady_clock::time_point deadline,
                                        std::chrono::milliseconds handshake_timeout, const OpeningPlan& plan,
                                        const std::string& where) {
    const auto start = std::chrono::steady_clock::now();
    PendingPeers pending(listener, plan, handshake_timeout);
    for (;;) {
        pending.take_requests(PendingPeers::kRequestsPerLook);
        if (std::optional<Opening> o = pending.advance()) {
            pending.drop_all(fmt::format("busy: this listener serves one {} at a time and took {} first",
                                         plan.peer_role, o->path->peer_name()));
            return o;
        }
        switch (pending.wait(deadline, plan.waker)) {
        case Readiness::kWoken: return std::nullopt;
        case Readiness::kTimedOut:
            throw TimeoutError(fmt::format("no {} connected to {} within {} ms", plan.peer_role, where,
                                           std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start)
                                               .count()));
        case Readiness::kReadable: break;
        }
    }
}

} // namespace rdmastream
