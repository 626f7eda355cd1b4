// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/connection_flags.hpp"

#include "rdmastream/error.hpp"
#include "rdmastream/sender.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace rdmastream::cli {

void add_connection_flags(CLI::App& app, ConnectionFlags& f, bool listens_by_default) {
    const std::string port = std::to_string(kDefaultPort);
    app.add_option("--listen", f.listen,
                   fmt::format("wait for the peer to connect, on ADDR (default: every address) and PORT (default "
                               "{}){}. Write --listen=:PORT when a positional argument follows. Twice: two paths, "
                               "the second on path B's address (each frame over both; a path that dies costs no "
                               "frame)",
                               port, listens_by_default ? "; the default" : ""))
        ->expected(0, 1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->default_str("")
        ->type_name("[ADDR][:PORT]");
    app.add_option("--connect", f.connect,
                   fmt::format("connect to a listening peer at ADDR, port PORT (default {}){}. Twice: two paths, "
                               "the second to the peer's path B address",
                               port, listens_by_default ? "" : "; the default side, but ADDR is needed"))
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("ADDR[:PORT]");
    app.add_option("-d,--device", f.devices,
                   "RDMA device that must carry the stream (e.g. rxe0, mlx5_0); default: whichever the route "
                   "to the peer uses. With two paths, a second -d is path B's")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.add_option("--policy", f.policy,
                   "lossless: the sender waits for a free slot; live: the newest frame wins and older ones are "
                   "dropped when the receiver falls behind")
        ->check(CLI::IsMember({"lossless", "live"}))
        ->capture_default_str();
    app.add_option("--poll", f.poll,
                   "event: sleep until a completion arrives (low CPU); busy: spin on the completion queue "
                   "(lowest latency, one core at 100 %)")
        ->check(CLI::IsMember({"event", "busy"}))
        ->capture_default_str();
    auto* slots = app.add_option("--slots", f.slots,
                                 listens_by_default
                                     ? "ring slots: frames in flight at once"
                                     : "at most N frames in flight (default: as many as the receiver's ring has)")
                      ->check(CLI::Range(1u, kMaxSenderSlots));
    if (listens_by_default) slots->capture_default_str();
    app.add_option("--connect-timeout", f.connect_timeout, "seconds to wait for the peer to appear")
        ->check(CLI::Range(0.01, 100000.0))
        ->capture_default_str();
    app.add_option("--idle-timeout", f.idle_timeout, "seconds without progress before giving up on the peer")
        ->check(CLI::Range(0.01, 100000.0))
        ->capture_default_str();
    app.add_option("--key-file", f.key_file,
                   "authenticate with the pre-shared key in FILE (32 to 1024 bytes, e.g. `head -c 32 /dev/urandom "
                   "> FILE`, mode 600): both ends prove they hold it before the ring is shared, and a peer without "
                   "it is refused; the other end needs the same file")
        ->type_name("FILE");
    app.add_option("--allow", f.allow,
                   "with --listen: take connections only from these peers, ADDR or ADDR/PREFIX, IPv4 or IPv6 "
                   "(repeat it, or separate by commas); others are refused at their connect request. Default: "
                   "everyone")
        ->type_name("ADDR[/PREFIX]");
    const PendingLimits pending;
    app.add_option("--max-pending", f.max_pending,
                   "with --listen: peers taken through their handshakes at once; each has 5 s to complete its "
                   "connect request and then the handshake timeout, so requests that never complete (a flood) "
                   "tie up at most this many while a genuine peer is served")
        ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
        ->default_val(pending.total)
        ->capture_default_str();
    app.add_option("--max-pending-per-address", f.max_pending_per_address,
                   "with --listen: of those, at most N from one peer address; its next request drops its oldest "
                   "one not yet connected, or is refused \"busy\"")
        ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
        ->default_val(pending.per_address)
        ->capture_default_str();
    if (listens_by_default) { // a receiver: a sender on probation must start streaming
        app.add_option("--handshake-timeout", f.handshake_timeout,
                       "with --listen: seconds a new sender has to prove its key (--key-file), and then to send "
                       "its first frame; one that does not (silent, or only keepalives) is refused and the next "
                       "one served")
            ->check(CLI::Range(0.01, 100000.0))
            ->capture_default_str();
    }
}

std::shared_ptr<const PresharedKey> load_key(const ConnectionFlags& f, const char* prog) {
    if (f.key_file.empty()) {
        return nullptr;
    }
    return PresharedKey::from_file(f.key_file, [prog](const std::string& w) {
        std::fprintf(stderr, "%s: %s\n", prog, w.c_str());
    });
}

AllowList allow_list(const ConnectionFlags& f, const ConnectionPlan& plan) {
    AllowList list;
    if (f.allow.empty()) return list;
    if (!plan.listen) {
        throw UserError("--allow needs --listen: it says who may connect to this side, and this side connects");
    }
    for (const std::string& entry : f.allow) list.add(entry);
    return list;
}

ConnectionPlan connection_plan(const CLI::App& app, const ConnectionFlags& f, bool listens_by_default) {
    const bool listen_given = app.count("--listen") > 0;
    const bool connect_given = app.count("--connect") > 0;
    if (listen_given && connect_given) {
        throw UserError("--listen and --connect exclude each other: one side listens, the other connects");
    }
    ConnectionPlan plan;
    plan.listen = listen_given || (!connect_given && listens_by_default);
    if (!plan.listen && (app.count("--max-pending") > 0 || app.count("--max-pending-per-address") > 0)) {
        throw UserError("--max-pending and --max-pending-per-address need --listen: they bound the peers a "
                        "listener takes in at once, and this side connects");
    }
    if (f.max_pending_per_address > f.max_pending) {
        throw UserError(fmt::format("--max-pending-per-address {} is more than --max-pending {}: one address can "
                                    "never have more pending than all together",
                                    f.max_pending_per_address, f.max_pending));
    }
    plan.pending = PendingLimits{f.max_pending, f.max_pending_per_address};
    const char* side = plan.listen ? "--listen" : "--connect";
    const std::vector<std::string>& given = plan.listen ? f.listen : f.connect;
    if (given.size() > 2) {
        throw UserError(fmt::format("{} given {} times: once per path, and a stream has two at most (path A, then "
                                    "path B)",
                                    side, given.size()));
    }
    if (f.devices.size() > 2 || (f.devices.size() == 2 && given.size() < 2)) {
        throw UserError(fmt::format("-d given {} times: once per path, the second for path B, and this stream has {} "
                                    "(give {} twice for two paths)",
                                    f.devices.size(), std::max<std::size_t>(given.size(), 1), side));
    }
    std::vector<Endpoint> endpoints;
    if (plan.listen) {
        endpoints.push_back(parse_endpoint(given.empty() ? std::string{} : given[0]));
        if (given.size() > 1) endpoints.push_back(parse_endpoint(given[1]));
    } else {
        if (given.empty()) {
            throw UserError("nothing to connect to: give --connect ADDR[:PORT] (the address of the listening peer), "
                            "or --listen to wait for the peer instead");
        }
        for (const std::string& g : given) {
            endpoints.push_back(parse_endpoint(g));
            if (endpoints.back().host.empty()) {
                throw UserError(fmt::format("--connect {}: the address is missing (e.g. --connect 192.0.2.1:{})", g,
                                            kDefaultPort));
            }
        }
    }
    plan.endpoint = endpoints[0];
    if (endpoints.size() == 2) {
        if (endpoints[1].host == endpoints[0].host && endpoints[1].port == endpoints[0].port) {
            throw UserError(fmt::format("{} {} twice: path B needs an address of its own (its own network, or at "
                                        "least its own port)",
                                        side, given[1]));
        }
        plan.endpoint_b = endpoints[1];
    }
    return plan;
}

std::chrono::milliseconds to_ms(double seconds) {
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
}

void add_report_flags(CLI::App& app, std::string& stats_json, bool& quiet, bool& verbose) {
    app.add_option("--stats-json", stats_json, "write the final stats as JSON to FILE (- for stdout)");
    app.add_flag("-q,--quiet", quiet, "no stats line every second (the summary still comes)");
    app.add_flag("-v,--verbose", verbose, "FFmpeg's own messages too");
}

PollMode poll_mode(const ConnectionFlags& f) { return f.poll == "busy" ? PollMode::kBusy : PollMode::kEvent; }

} // namespace rdmastream::cli
