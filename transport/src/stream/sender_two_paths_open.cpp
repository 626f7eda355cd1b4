// SPDX-License-Identifier: LGPL-2.1-or-later
// Sender::open over two Doors (sender.hpp; docs/design/two-paths.md,
// Decisions 1, 2 and 5): the founding connection through door A as a
// one-path stream's (dialled, or the first receiver through its handshake);
// its session secret then lets path B join, and either path come back,
// through a PathRejoin (dialled in the background, or taken by each door's
// listener thread, which refuses every other receiver "busy").
//
// Frame memory is registered once per RDMA device: every connection takes
// its protection domain from one pool (ConnectionOptions::pd_for), so a
// path redialled on the same device posts with the keys it had, and the
// memory domain gains a device only when a path comes up on a new one.
#include "stream/sender_impl.hpp"

#include "rdmastream/error.hpp"
#include "stream/log_or_stderr.hpp"
#include "stream/path_rejoin.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

namespace rdmastream {
namespace {

using Clock = std::chrono::steady_clock;

// One protection domain per device, for whichever thread opens a connection.
class PdPool {
public:
    std::shared_ptr<ibv_pd> for_device(ibv_context* device) {
        const std::lock_guard lock(mutex_);
        for (const auto& pd : pds_) {
            if (pd->context == device) return pd;
        }
        return pds_.emplace_back(make_shared_pd(device));
    }
    // The PD goes once its last connection and registration do.
    void forget(const ibv_pd* pd) {
        const std::lock_guard lock(mutex_);
        std::erase_if(pds_, [pd](const std::shared_ptr<ibv_pd>& p) { return p.get() == pd; });
    }

private:
    std::mutex mutex_;
    std::vector<std::shared_ptr<ibv_pd>> pds_;
};

// What the two-path sender's hooks need, alive as long as it is.
struct TwoPathState {
    std::shared_ptr<PdPool> pds = std::make_shared<PdPool>();
    std::array<SenderOptions, 2> options;
    std::unique_ptr<DoorClaim> door_a, door_b; // listening: the listeners, held while the stream lives
    std::unique_ptr<PathRejoin> rejoin;        // after the doors: it serves their listeners
    Sender::Impl* sender = nullptr;            // set once made; the hooks run on its thread only
    std::vector<ibv_pd*> devices;              // the memory domain's, by its index (nullptr: removed)

    // The memory domain's device for memory on `pd`: added (every live
    // frame memory registered there) the first time a path is on it.
    std::size_t device_of(const std::shared_ptr<ibv_pd>& pd) {
        const auto at = std::find(devices.begin(), devices.end(), pd.get());
        if (at != devices.end()) return static_cast<std::size_t>(at - devices.begin());
        auto registrar = [pd](std::span<std::byte> pages, std::size_t locked) {
            return register_pages(pd, pages, locked, 0); // read by the NIC only
        };
        if (!sender->domain) {
            sender->domain = std::make_shared<MemoryDomain::Impl>(registrar);
            devices.push_back(pd.get());
            return 0;
        }
        const std::size_t d = sender->domain->add_device(registrar);
        if (d == devices.size()) devices.emplace_back();
        devices[d] = pd.get();
        return d;
    }
    // Device `d` is going away and no connection is left on it: its keys
    // and its PD go (the PD with the connection that still holds it).
    void release_device(std::size_t d) {
        if (d >= devices.size() || devices[d] == nullptr) return;
        sender->domain->remove_device(d);
        pds->forget(devices[d]);
        devices[d] = nullptr;
    }
};

} // namespace

std::unique_ptr<Sender> Sender::open(Door& a, Door& b, const SenderConfig& config) {
    Door::Impl& da = a.impl();
    Door::Impl& db = b.impl();
    if (bool(da.listener) != bool(db.listener)) {
        throw UserError("two paths: both Doors listen, or both dial (one end dials both paths, the other listens "
                        "on both)");
    }
    if (config.receivers > 0) { // a fan-out: receivers over one path or two
        if (!da.listener) {
            throw UserError("a fan-out (receivers) listens: give two listening Doors, or no receivers");
        }
        std::unique_ptr<Impl> fan = fanout_sender(std::make_unique<DoorClaim>(a.impl_),
                                                  std::make_unique<DoorClaim>(b.impl_),
                                                  fmt::format("{} or {}", a.describe(), b.describe()), config);
        if (!fan) return nullptr; // woken
        return std::unique_ptr<Sender>(new Sender(std::move(fan)));
    }
    auto state = std::make_shared<TwoPathState>();
    state->options = {sender_options(config), sender_options(config)};
    state->options[1].device = config.device_b;
    for (SenderOptions& o : state->options) o.hang_up_wait = std::chrono::milliseconds(0); // one path's failure holds no frame
    std::array<OpeningPlan, 2> plans{FrameSender::opening_plan(state->options[0]),
                                     FrameSender::opening_plan(state->options[1])};
    for (OpeningPlan& plan : plans) {
        plan.queues.pd_for = [pds = state->pds](ibv_context* device) { return pds->for_device(device); };
    }
    const LogFn log = log_or_stderr(config.log);
    std::array<PathRejoin::Door, 2> doors{};
    if (!da.listener) {
        if (!config.device.empty()) check_device_exists(config.device);
        if (!config.device_b.empty()) check_device_exists(config.device_b);
        doors = {PathRejoin::Door{da.endpoint, nullptr}, PathRejoin::Door{db.endpoint, nullptr}};
    } else {
        state->door_a = std::make_unique<DoorClaim>(a.impl_);
        state->door_b = std::make_unique<DoorClaim>(b.impl_);
        doors = {PathRejoin::Door{std::nullopt, &state->door_a->listener()},
                 PathRejoin::Door{std::nullopt, &state->door_b->listener()}};
    }
    std::optional<Opening> o = !da.listener ? dial(da.endpoint, config.open_timeout, plans[0])
                                            : accept_next_peer(state->door_a->listener(),
                                                               Clock::now() + config.open_timeout,
                                                               Handshake::kPatience, plans[0], a.describe());
    if (!o) return nullptr; // woken
    std::shared_ptr<const SessionSecret> secret = o->handshake->session_secret();
    const std::string peer = o->path->peer_name();
    std::unique_ptr<FrameSender> founder = FrameSender::over(std::move(*o), state->options[0]);
    const std::shared_ptr<ibv_pd> founder_pd = founder->shared_pd();
    state->rejoin = std::make_unique<PathRejoin>(doors, plans, secret, peer, Handshake::kPatience, log);

    TwoPathHooks hooks;
    hooks.mail = &state->rejoin->mail();
    // The hooks keep the state (the rejoin's threads, the doors) as long as
    // the sender keeps them.
    hooks.lost = [s = state](std::size_t path) { s->rejoin->lost(path); };
    // Before the path's connection goes: librdmacm may close the device's
    // context as soon as its last id does (close_removed_cm_devices).
    hooks.release_device = [s = state](std::size_t device) {
        s->release_device(device);
        s->rejoin->device_gone();
    };
    hooks.take_joined = [s = state, waker = config.waker, log](std::size_t& path,
                                                               std::size_t& device) -> std::unique_ptr<FrameSender> {
        while (std::optional<PathRejoin::Joined> j = s->rejoin->take()) {
            path = j->path;
            try {
                j->opening.path->set_waker(waker.get()); // the stream end's thread waits on it now
                std::unique_ptr<FrameSender> tx = FrameSender::over(std::move(j->opening), s->options[path]);
                device = s->device_of(tx->shared_pd());
                return tx;
            } catch (const std::exception& e) {
                log(fmt::format("path {}: its connection came back but failed: {}", static_cast<char>('A' + path),
                                e.what()));
                s->rejoin->lost(path);
            }
        }
        return nullptr;
    };
    std::unique_ptr<Impl> impl = two_path_sender({std::move(founder), nullptr}, config, std::move(hooks));
    state->sender = impl.get();
    state->device_of(founder_pd); // device 0: path A's
    if (!da.listener) state->rejoin->lost(1); // path B: dialled at once, in the background
    return std::unique_ptr<Sender>(new Sender(std::move(impl)));
}

} // namespace rdmastream
