// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/door_impl.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <stdexcept>

namespace rdmastream {

Door::Door(std::shared_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Door::Door(Door&&) noexcept = default;
Door& Door::operator=(Door&&) noexcept = default;
Door::~Door() = default;

Door Door::dial(const Endpoint& peer) {
    auto d = std::make_shared<Impl>();
    d->endpoint = peer;
    return Door(std::move(d));
}

Door Door::listen(const Endpoint& local, AllowList allow, LogFn log, PendingLimits pending) {
    if (pending.total == 0 || pending.per_address == 0 || pending.per_address > pending.total) {
        throw UserError(fmt::format("a listener's pending handshakes need room for at least one, and no more per "
                                    "address than in all (asked: {} in all, {} per address)",
                                    pending.total, pending.per_address));
    }
    auto d = std::make_shared<Impl>();
    d->endpoint = local;
    d->listener = std::make_unique<Listener>(local);
    d->listener->set_allow(std::move(allow));
    d->listener->set_pending_limits(pending);
    if (log) {
        d->listener->set_log(std::move(log));
    }
    return Door(std::move(d));
}

bool Door::listening() const noexcept { return impl_->listener != nullptr; }

std::uint16_t Door::port() const { return impl_->listener ? impl_->listener->port() : impl_->endpoint.port; }

std::string Door::describe() const {
    return fmt::format("{}:{}", impl_->endpoint.host.empty() ? "*" : impl_->endpoint.host, port());
}

const AllowList& Door::allow() const noexcept {
    static const AllowList kEveryone;
    return impl_->listener ? impl_->listener->allow() : kEveryone;
}

PendingLimits Door::pending_limits() const noexcept {
    return impl_->listener ? impl_->listener->pending_limits() : PendingLimits{};
}

void Door::Impl::claim() {
    if (in_use) {
        throw std::logic_error("a stream end is open through this Door already: open the next once it is gone");
    }
    in_use = true;
}

DoorClaim::DoorClaim(std::shared_ptr<Door::Impl> door) : door_(std::move(door)) { door_->claim(); }
DoorClaim::~DoorClaim() { door_->in_use = false; }

} // namespace rdmastream
