// SPDX-License-Identifier: LGPL-2.1-or-later
#include "open_sender.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace rdmastream::cli {
namespace {

void log_line(const std::string& line) { std::fprintf(stderr, "rdmasend: %s\n", line.c_str()); }

const char* policy_name(Policy p) { return p == Policy::kLive ? "live" : "lossless"; }

// One receiver: what it offers, and the policy in force (the receiver may
// have asked for live).
std::unique_ptr<Sender> say_connected(std::unique_ptr<Sender> tx) {
    if (tx) {
        std::fprintf(stderr, "rdmasend: connected: the receiver's ring has %u slots of %u bytes; %s policy\n",
                     tx->ring_slots(), tx->ring_slot_size(), policy_name(tx->policy()));
    }
    return tx;
}

// A fan-out counts the receivers it has now (more than asked for if one
// more joined meanwhile).
std::size_t joined(const Sender& tx) {
    std::size_t n = 0;
    for (const ReceiverReport& r : tx.receivers()) n += r.left ? 0 : 1;
    return n;
}

// `door_b`: a second door, where receivers with two paths dial their second.
std::unique_ptr<Sender> open_fanout(Door& door, Door* door_b, const SenderConfig& config) {
    std::fprintf(stderr, "rdmasend: listening on %s%s%s for %zu receiver(s); more may join while it streams\n",
                 door.describe().c_str(), door_b ? " (path A) and " : "",
                 door_b ? (door_b->describe() + " (path B, for receivers with two paths)").c_str() : "",
                 config.receivers);
    std::unique_ptr<Sender> tx;
    try {
        tx = door_b ? Sender::open(door, *door_b, config) : Sender::open(door, config);
    } catch (const TimeoutError& e) {
        // The transport's hint speaks of receivers in general ("start the
        // others (they dial ...), or wait for fewer receivers or longer");
        // rdmasend's names the command and its flags instead.
        std::string what = e.what();
        if (const auto at = what.find(": start the others"); at != std::string::npos) what.resize(at);
        throw TimeoutError(fmt::format("{}: start the others (rdmarecv --connect THIS-HOST:{}), or give fewer "
                                       "--receivers or a longer --connect-timeout",
                                       what, door.port()));
    }
    if (tx) {
        std::fprintf(stderr, "rdmasend: %zu receiver(s) connected: streaming (%s policy unless a receiver asks "
                             "for live)\n",
                     joined(*tx), policy_name(config.policy));
    }
    return tx;
}

// Two paths: both dialled, or both listened on (each Door with --allow).
std::unique_ptr<Sender> open_two_paths(const ConnectionPlan& plan, const AllowList& allow, const SenderConfig& config) {
    if (!plan.listen) {
        Door a = Door::dial(plan.endpoint);
        Door b = Door::dial(*plan.endpoint_b);
        std::fprintf(stderr, "rdmasend: two paths: A to %s, B to %s\n", a.describe().c_str(), b.describe().c_str());
        return say_connected(Sender::open(a, b, config));
    }
    Door a = Door::listen(plan.endpoint, allow, log_line, plan.pending);
    Door b = Door::listen(*plan.endpoint_b, allow, log_line, plan.pending);
    if (config.receivers > 0) return open_fanout(a, &b, config);
    std::fprintf(stderr, "rdmasend: listening for a receiver on two paths: A on %s, B on %s%s%s\n",
                 a.describe().c_str(), b.describe().c_str(), allow.empty() ? "" : "; allowed: ",
                 allow.empty() ? "" : allow.describe().c_str());
    return say_connected(Sender::open(a, b, config));
}

} // namespace

std::unique_ptr<Sender> open_sender(const ConnectionPlan& plan, AllowList allow, SenderConfig config) {
    config.log = log_line; // a fan-out's joins and the receivers it drops; each path's loss and return
    if (plan.endpoint_b) return open_two_paths(plan, allow, config);
    if (!plan.listen) {
        Door door = Door::dial(plan.endpoint);
        return say_connected(Sender::open(door, config));
    }
    // The Door may go once the Sender is open: the Sender keeps its
    // listener, so later receivers hear "busy" (or join a fan-out).
    Door door = Door::listen(plan.endpoint, std::move(allow), log_line, plan.pending);
    if (config.receivers > 0) {
        return open_fanout(door, nullptr, config);
    }
    const AllowList& allowed = door.allow();
    std::fprintf(stderr, "rdmasend: listening on %s for a receiver%s%s\n", door.describe().c_str(),
                 allowed.empty() ? "" : "; allowed: ", allowed.empty() ? "" : allowed.describe().c_str());
    return say_connected(Sender::open(door, config));
}

} // namespace rdmastream::cli
