// SPDX-License-Identifier: LGPL-2.1-or-later
#include "stream/path_rejoin.hpp"

#include "rdmastream/error.hpp"
#include "setup/cm_devices.hpp"
#include "stream/pending_peers.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace rdmastream {
namespace {

using namespace std::chrono_literals;

char letter(std::size_t path) { return static_cast<char>('A' + path); }

// One dial: how long a path's peer may take to answer before the next try.
constexpr std::chrono::milliseconds kDialPatience = 2s;
constexpr std::chrono::milliseconds kFirstBackoff = 200ms;
constexpr std::chrono::milliseconds kMaxBackoff = 5s;
// How long after the stream opened a path that never joined yet is dialled
// again after a refusal: a fan-out screens a second path against the
// receivers it has taken, and may not have finished taking this one's first.
constexpr std::chrono::milliseconds kFirstJoinGrace = 5s;

} // namespace

PathRejoin::PathRejoin(std::array<Door, kPaths> doors, std::array<OpeningPlan, kPaths> plans,
                       std::shared_ptr<const SessionSecret> secret, std::string stream_peer,
                       std::chrono::milliseconds handshake_timeout, LogFn log, Prepare prepare)
    : doors_(std::move(doors)),
      plans_(std::move(plans)),
      secret_(std::move(secret)),
      stream_peer_(std::move(stream_peer)),
      handshake_timeout_(handshake_timeout),
      log_(std::move(log)),
      opened_(std::chrono::steady_clock::now()),
      prepare_(std::move(prepare)) {
    for (std::size_t p = 0; p < kPaths; ++p) {
        if (doors_[p].listen != nullptr) threads_[p] = std::thread([this, p] { listen_loop(p); });
    }
}

PathRejoin::~PathRejoin() {
    stopping_.store(true);
    for (std::size_t p = 0; p < kPaths; ++p) {
        stop_[p].wake();
        if (threads_[p].joinable()) threads_[p].join();
    }
}

void PathRejoin::lost(std::size_t path) {
    if (!doors_[path].dial || stopping_.load()) return; // a listening door takes the join whenever it comes
    if (threads_[path].joinable()) threads_[path].join(); // the last dialler, done (it handed its connection over)
    stop_[path].take();
    threads_[path] = std::thread([this, path] { dial_loop(path); });
}

std::optional<PathRejoin::Joined> PathRejoin::take() {
    const std::lock_guard lock(mutex_);
    for (std::size_t p = 0; p < kPaths; ++p) {
        if (box_[p]) {
            std::optional<Joined> j = std::move(box_[p]);
            box_[p].reset();
            return j;
        }
    }
    return std::nullopt;
}

bool PathRejoin::put(std::size_t path, Opening opening) {
    std::optional<Joined> j;
    j.emplace(Joined{path, std::move(opening), nullptr});
    if (prepare_) {
        try {
            prepare_(*j);
        } catch (const std::exception& e) {
            log_(fmt::format("path {}: its connection came back but failed: {}", letter(path), e.what()));
            return false;
        }
    }
    {
        const std::lock_guard lock(mutex_);
        box_[path].reset(); // one not taken yet: the newer connection wins
        box_[path].emplace(std::move(*j));
    }
    mail_.wake();
    return true;
}

bool PathRejoin::pause(std::size_t path, std::chrono::milliseconds d) {
    return wait_readable(-1, stop_[path], d) != Readiness::kWoken && !stopping_.load();
}

void PathRejoin::dial_loop(std::size_t path) {
    OpeningPlan plan = plans_[path];
    plan.waker = &stop_[path];
    plan.join = Handshake::Join{secret_, path == 1, true, stream_peer_};
    const Endpoint& peer = *doors_[path].dial;
    std::chrono::milliseconds backoff = kFirstBackoff;
    bool said = false;
    for (std::size_t tries = 1; !stopping_.load(); ++tries) {
        // A device that went with a path (its stream end let go of
        // everything on it) leaves, so that it can come back. Only then: a
        // look at the device list opens every device's context for good.
        if (device_gone_.load()) close_removed_cm_devices();
        try {
            std::optional<Opening> o = dial(peer, kDialPatience, plan);
            if (!o) return; // stopped
            device_gone_.store(false); // through: whatever went is gone, or back
            joined_once_[path].store(true);
            if (put(path, std::move(*o))) return;
        } catch (const UserError& e) {
            // Refused for a reason a retry does not change: the stream ended
            // there, or that peer is not this stream's. Except at first
            // (kFirstJoinGrace): then it is dialled again as for a failure.
            if (joined_once_[path].load() || std::chrono::steady_clock::now() >= opened_ + kFirstJoinGrace) {
                log_(fmt::format("path {} ({}:{}) not redialled: {}", letter(path), peer.host, peer.port, e.what()));
                return;
            }
        } catch (const std::exception& e) {
            if (!said) { // the first failure says how it fails; the rest are the same outage
                log_(fmt::format("path {} ({}:{}): redialling every {} s at most until it answers ({})",
                                 letter(path), peer.host, peer.port, kMaxBackoff.count() / 1000, e.what()));
                said = true;
            }
        }
        if (!pause(path, backoff)) return;
        backoff = std::min(backoff * 2, kMaxBackoff);
    }
}

void PathRejoin::listen_loop(std::size_t path) {
    OpeningPlan plan = plans_[path];
    plan.waker = &stop_[path];
    plan.joins = secret_;
    Listener& listener = *doors_[path].listen;
    const wire::Role peer_role = plan.role == wire::Role::kSender ? wire::Role::kReceiver : wire::Role::kSender;
    const std::string busy = fmt::format("busy: this listener serves one {} at a time and is streaming with {}; try "
                                         "again when that stream ends",
                                         plan.peer_role, stream_peer_);
    // Only this stream's joins get further than the screen.
    const Listener::Screen joins_only = [&](std::span<const std::byte> hello, const Listener::Requester&) {
        if (!wire::read_join(peer_role, hello)) throw PeerRefused(wire::RejectReason::kBusy, busy);
    };
    while (!stopping_.load()) {
        try {
            PendingPeers pending(listener, plan, handshake_timeout_);
            while (!stopping_.load()) {
                pending.take_requests(PendingPeers::kRequestsPerLook, joins_only);
                while (std::optional<Opening> o = pending.advance()) put(path, std::move(*o));
                if (pending.wait(std::chrono::steady_clock::now() + std::chrono::hours(1), &stop_[path]) ==
                    Readiness::kWoken) {
                    return;
                }
            }
            return;
        } catch (const ListenerError& e) {
            // Its device went: the stream goes on over the other path, and
            // this door listens again once the device is back.
            log_(fmt::format("path {}: its door stopped taking connections: {}; it listens again by itself once "
                             "the device is back",
                             letter(path), e.cause()));
        } catch (const std::exception& e) {
            log_(fmt::format("path {}: its door stopped taking connections: {}", letter(path), e.what()));
            return;
        }
        if (!listen_again(path, listener)) return; // pending's handshakes are gone with it
    }
}

bool PathRejoin::listen_again(std::size_t path, Listener& listener) {
    listener.let_go_of_device(); // the kernel waits for it before the device can go
    std::chrono::milliseconds backoff = kFirstBackoff;
    for (;;) {
        close_removed_cm_devices(); // and for librdmacm's context of it
        try {
            listener.listen_again();
            const ibv_context* device = listener.device();
            log_(fmt::format("path {}: listening again on port {}{}", letter(path), listener.port(),
                             device ? fmt::format(" ({})", ibv_get_device_name(device->device)) : ""));
            return true;
        } catch (const std::exception&) { // the device is not back yet: said once, above
        }
        if (!pause(path, backoff)) return false;
        backoff = std::min(backoff * 2, kMaxBackoff);
    }
}

} // namespace rdmastream
