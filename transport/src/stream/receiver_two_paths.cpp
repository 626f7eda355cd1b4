// SPDX-License-Identifier: LGPL-2.1-or-later
// Receiver::open over two Doors (receiver.hpp; docs/design/two-paths.md,
// Decisions 1 and 5): the founding connection comes through door A as a
// one-path stream's does (dialled, or the first sender through its
// handshake and its probation); its session secret then lets path B join,
// and either path come back, through a PathRejoin: dialled in the
// background, or taken by each door's listener thread (which refuses every
// other sender "busy", as BusyRefuser does for one path). The frames of
// both paths meet in a PathReceiver.
#include "stream/receiver_impl.hpp"

#include "rdmastream/error.hpp"
#include "stream/log_or_stderr.hpp"

#include <fmt/format.h>


namespace rdmastream {
namespace {

using Clock = std::chrono::steady_clock;

PathReceiver::Options path_options(const ReceiverConfig& c, PathRejoin& rejoin,
                                   const std::function<void(const std::string&)>& log) {
    PathReceiver::Options o;
    o.live = c.live;
    o.skew = c.path_skew;
    o.compare_payloads = c.compare_copies;
    o.poll_mode = c.poll_mode;
    o.waker = c.waker.get();
    o.log = log;
    o.mail = &rejoin.mail();
    o.lost = [&rejoin](std::size_t p) { rejoin.lost(p); };
    o.device_gone = [&rejoin] { rejoin.device_gone(); };
    o.take_joined = [&rejoin](std::size_t& path) -> std::unique_ptr<FrameReceiver> {
        std::optional<PathRejoin::Joined> j = rejoin.take();
        if (!j) return nullptr;
        path = j->path;
        return std::move(j->receiver); // made on the rejoin's thread (prepare)
    };
    return o;
}

// On the thread that brought a path back: its ring registered and
// announced there, so that pinning it never stalls the other path's frames.
PathRejoin::Prepare prepare(std::array<RingConfig, 2> rings) {
    return [rings](PathRejoin::Joined& j) {
        j.opening.path->set_waker(rings[j.path].waker.get()); // the stream end's thread waits on it once taken
        j.receiver = FrameReceiver::over(std::move(j.opening), rings[j.path]);
    };
}

} // namespace

std::unique_ptr<Receiver> Receiver::open(Door& a, Door& b, const ReceiverConfig& config) {
    Door::Impl& da = a.impl();
    Door::Impl& db = b.impl();
    if (bool(da.listener) != bool(db.listener)) {
        throw UserError("two paths: both Doors listen, or both dial (one end dials both paths, the other listens "
                        "on both)");
    }
    std::array<RingConfig, 2> rings{ring_config(config), ring_config(config)};
    rings[1].device = config.device_b;
    for (RingConfig& r : rings) r.hang_up_wait = std::chrono::milliseconds(0); // one path's failure holds no frame
    const std::array<OpeningPlan, 2> plans{FrameReceiver::opening_plan(rings[0]),
                                           FrameReceiver::opening_plan(rings[1])};
    const LogFn log = log_or_stderr(config.log);
    auto impl = std::make_unique<Impl>();
    if (!da.listener) {
        // Path A founds the stream; path B is dialled in the background at once.
        std::optional<Opening> o = dial(da.endpoint, config.open_timeout, plans[0]);
        if (!o) return nullptr; // woken
        std::shared_ptr<const SessionSecret> secret = o->handshake->session_secret();
        const std::string peer = o->path->peer_name();
        std::unique_ptr<FrameReceiver> rx = FrameReceiver::over(std::move(*o), rings[0]);
        impl->rejoin = std::make_unique<PathRejoin>(
            std::array<PathRejoin::Door, 2>{PathRejoin::Door{da.endpoint, nullptr}, PathRejoin::Door{db.endpoint, nullptr}},
            plans, secret, peer, config.handshake_timeout, log, prepare(rings));
        impl->paths = std::make_unique<PathReceiver>(std::array<std::unique_ptr<FrameReceiver>, 2>{std::move(rx), nullptr},
                                                     path_options(config, *impl->rejoin, log));
        impl->rejoin->lost(1);
        return std::unique_ptr<Receiver>(new Receiver(std::move(impl)));
    }
    impl->door = std::make_unique<DoorClaim>(a.impl_);
    impl->door_b = std::make_unique<DoorClaim>(b.impl_);
    Listener& listener = impl->door->listener();
    const auto deadline = Clock::now() + config.open_timeout;
    for (;;) {
        // The next sender through its handshake on door A (refused ones logged).
        std::optional<Opening> o =
            accept_next_peer(listener, deadline, config.handshake_timeout, plans[0], a.describe());
        if (!o) return nullptr; // woken
        std::shared_ptr<const SessionSecret> secret = o->handshake->session_secret();
        const std::string peer = o->path->peer_name();
        std::unique_ptr<FrameReceiver> rx = FrameReceiver::over(std::move(*o), rings[0]);
        rx->first_frame_by(Clock::now() + config.handshake_timeout);
        // Both doors take this stream's joins from now on (its sender may
        // dial path B before its first frame), and refuse everyone else.
        impl->rejoin = std::make_unique<PathRejoin>(
            std::array<PathRejoin::Door, 2>{PathRejoin::Door{std::nullopt, &listener},
                                            PathRejoin::Door{std::nullopt, &impl->door_b->listener()}},
            plans, secret, peer, config.handshake_timeout, log, prepare(rings));
        impl->paths = std::make_unique<PathReceiver>(std::array<std::unique_ptr<FrameReceiver>, 2>{std::move(rx), nullptr},
                                                     path_options(config, *impl->rejoin, log));
        try {
            impl->first =
                first_frame([&](std::chrono::milliseconds idle) { return impl->paths->wait_frame(idle); }, peer, config);
            if (!impl->first) return nullptr; // woken
        } catch (const std::exception& e) {
            listener.log_refusal(peer, e.what());
            impl->paths.reset(); // its connections go, then the threads that took its joins
            impl->rejoin.reset();
            continue;
        }
        return std::unique_ptr<Receiver>(new Receiver(std::move(impl)));
    }
}

} // namespace rdmastream
