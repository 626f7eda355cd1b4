// SPDX-License-Identifier: LGPL-2.1-or-later
// The flags both programs share: which side listens, where, which device,
// how many slots, which policy. Parsing only; connecting is the transport's.
#pragma once

#include "rdmastream/allow_list.hpp"
#include "rdmastream/door.hpp"
#include "rdmastream/endpoint.hpp"
#include "rdmastream/key.hpp"
#include "rdmastream/policy.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream::cli {

struct ConnectionFlags {
    // Each "[ADDR][:PORT]" (--listen) or "ADDR[:PORT]" (--connect); a
    // second one is path B (two paths: docs/reliability.md).
    std::vector<std::string> listen;
    std::vector<std::string> connect;
    std::vector<std::string> devices; // -d: each must exist; a second is path B's
    std::string device() const { return devices.empty() ? std::string{} : devices[0]; }
    std::string device_b() const { return devices.size() > 1 ? devices[1] : std::string{}; }
    std::string policy = "lossless";
    std::string poll = "event"; // completion handling: "event" (low CPU) or "busy" (lowest latency)
    std::uint32_t slots = 8;
    double connect_timeout = 60; // seconds to wait for the peer
    double idle_timeout = 30;    // seconds without a frame before giving up
    std::string key_file;        // --key-file: a pre-shared key both ends must prove; empty: none
    // With --listen: who may connect (--allow, repeatable, comma-separated);
    // empty: everyone.
    std::vector<std::string> allow;
    // rdmarecv --listen: seconds a new sender has to send its first frame
    // before it is refused and the next one served.
    double handshake_timeout = 10;
    // With --listen: how many peers may be on their way in at once, in all
    // and from one address (the transport's PendingLimits).
    std::size_t max_pending = PendingLimits{}.total;
    std::size_t max_pending_per_address = PendingLimits{}.per_address;
};

struct ConnectionPlan {
    bool listen = false;
    Endpoint endpoint;
    std::optional<Endpoint> endpoint_b; // two paths: path B's
    PendingLimits pending; // listening: --max-pending, --max-pending-per-address
};

// Adds --listen, --connect, -d/--device, --policy, --poll, --slots,
// --connect-timeout, --idle-timeout, --key-file, --allow, --max-pending,
// --max-pending-per-address. `listens_by_default` says which side this program takes
// when neither --listen nor --connect is given.
void add_connection_flags(CLI::App& app, ConnectionFlags& flags, bool listens_by_default);

// --allow as the transport's AllowList. Throws UserError on a bad entry, or
// when --allow is given without listening (a connecting side picks its peer).
AllowList allow_list(const ConnectionFlags& flags, const ConnectionPlan& plan);

// After parsing: which side, the endpoint, and (listening) the pending
// limits. Throws UserError on both --listen and --connect, a bad address,
// or pending limits without --listen or with the per-address one above
// the total.
ConnectionPlan connection_plan(const CLI::App& app, const ConnectionFlags& flags, bool listens_by_default);

std::chrono::milliseconds to_ms(double seconds);

// Adds --stats-json FILE, -q/--quiet and -v/--verbose, as both programs
// report.
void add_report_flags(CLI::App& app, std::string& stats_json, bool& quiet, bool& verbose);

// --key-file's key (null without one); a file open to group or others is
// warned about on stderr as `PROG: warning: ...`. Throws UserError for a bad file.
std::shared_ptr<const PresharedKey> load_key(const ConnectionFlags& flags, const char* prog);

// --poll as the transport's PollMode.
PollMode poll_mode(const ConnectionFlags& flags);

} // namespace rdmastream::cli
