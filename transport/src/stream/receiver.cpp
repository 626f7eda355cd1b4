// SPDX-License-Identifier: LGPL-2.1-or-later
// Receiver (receiver.hpp): opening the receiving end through a Door, the
// one way every adapter does it, and a FrameReceiver under it.
//
// Listening, a new sender is on probation until its first frame: whatever
// goes wrong before that (silence, a bad format, a first frame the caller's
// check refuses, a hang-up) is that peer's doing, costs one line in the
// log, and the next sender is served. Once admitted, every other sender
// that dials is told "busy" (BusyRefuser) until the Receiver goes.
#include "rdmastream/receiver.hpp"

#include "stream/receiver_impl.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

namespace rdmastream {

using Clock = std::chrono::steady_clock;

RingConfig ring_config(const ReceiverConfig& c) {
    RingConfig r;
    r.slots = c.slots;
    r.slot_size = c.slot_size;
    r.poll_mode = c.poll_mode;
    r.device = c.device;
    r.live = c.live;
    r.waker = c.waker;
    r.max_frame_bytes = c.max_frame_bytes;
    r.max_ring_bytes = c.max_ring_bytes;
    r.key = c.key;
    r.handshake_timeout = c.handshake_timeout;
    r.memory_windows = c.memory_windows;
    r.warn = c.warn;
    r.flow_slots = c.flow_slots;
    r.max_flows = c.max_flows;
    return r;
}

std::optional<ReceivedFrame> first_frame(const std::function<FrameReceiver::Arrival(std::chrono::milliseconds)>& wait,
                                         const std::string& peer, const ReceiverConfig& c) {
    // Longer than the probation: its own deadline, not the idle timeout,
    // ends a silent sender's wait (with the message that says so).
    const auto idle = 2 * c.handshake_timeout + std::chrono::seconds(1);
    FrameReceiver::Arrival a = wait(idle);
    if (a.kind == FrameReceiver::Arrival::kWoken) return std::nullopt;
    if (a.kind == FrameReceiver::Arrival::kEnd) {
        throw ProtocolError("it ended the stream before its first frame");
    }
    if (a.frame.format == nullptr) {
        throw ProtocolError("it sent a frame before announcing its format");
    }
    if (c.check_first_frame) c.check_first_frame(a.frame, peer);
    return std::move(a.frame);
}

Receiver::Receiver(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Receiver::~Receiver() = default;

std::unique_ptr<Receiver> Receiver::open(Door& door, const ReceiverConfig& config) {
    const RingConfig ring = ring_config(config);
    auto impl = std::make_unique<Impl>();
    Door::Impl& d = door.impl();
    if (!d.listener) {
        impl->rx = FrameReceiver::connect(d.endpoint, ring, config.open_timeout);
        if (!impl->rx) return nullptr; // woken
        return std::unique_ptr<Receiver>(new Receiver(std::move(impl)));
    }
    impl->door = std::make_unique<DoorClaim>(door.impl_);
    Listener& listener = impl->door->listener();
    const auto deadline = Clock::now() + config.open_timeout;
    for (;;) {
        // The next sender through its handshake (refused ones logged), then its probation.
        std::unique_ptr<FrameReceiver> rx = FrameReceiver::accept(listener, ring, time_left(deadline), door.describe());
        if (!rx) return nullptr; // woken
        try {
            rx->first_frame_by(Clock::now() + config.handshake_timeout);
            impl->first = first_frame([&](std::chrono::milliseconds idle) { return rx->wait_frame(idle); }, rx->peer(),
                                      config);
            if (!impl->first) return nullptr; // woken: the sender goes with rx
        } catch (const std::exception& e) {
            listener.log_refusal(rx->peer(), e.what());
            continue; // its ring and connection go with rx
        }
        impl->rx = std::move(rx);
        impl->busy.emplace(listener, "sender " + impl->rx->peer());
        return std::unique_ptr<Receiver>(new Receiver(std::move(impl)));
    }
}

Receiver::Arrival Receiver::wait_frame(std::chrono::milliseconds idle) {
    if (impl_->first) {
        Arrival a{Arrival::kFrame, std::move(*impl_->first)};
        impl_->first.reset();
        return a;
    }
    FrameReceiver::Arrival a = impl_->paths ? impl_->paths->wait_frame(idle) : impl_->rx->wait_frame(idle);
    return Arrival{static_cast<Arrival::Kind>(a.kind), std::move(a.frame)};
}

std::optional<ReceivedFrame> Receiver::next(std::chrono::milliseconds idle) {
    for (;;) {
        Arrival a = wait_frame(idle);
        if (a.kind == Arrival::kFrame) return std::move(a.frame);
        if (a.kind == Arrival::kEnd) return std::nullopt;
    }
}

// Two paths: the founding path's connection now (its ring, formats).
const FrameReceiver& Receiver::Impl::founder() const noexcept {
    // A path lost with its device may have no connection left; one path
    // always has one (PathReceiver keeps the last).
    const FrameReceiver* a = paths->path(0);
    const FrameReceiver* b = paths->path(1);
    return (paths->up(0) || b == nullptr) && a != nullptr ? *a : *b;
}

void Receiver::release(std::uint16_t slot) {
    if (impl_->paths) {
        impl_->paths->release(slot);
    } else {
        impl_->rx->release(slot);
    }
}
void Receiver::leave() noexcept {
    if (impl_->paths) {
        impl_->paths->leave();
    } else {
        impl_->rx->leave();
    }
}
const StreamStats& Receiver::stats() const noexcept { return impl_->paths ? impl_->paths->stats() : impl_->rx->stats(); }
ReceiverState Receiver::state() const noexcept { return impl_->paths ? impl_->paths->state() : impl_->rx->state(); }
std::string Receiver::peer() const { return impl_->paths ? impl_->founder().peer() : impl_->rx->peer(); }
std::uint32_t Receiver::slots() const noexcept { return impl_->receiver().ring().slots; }
std::uint32_t Receiver::slot_size() const noexcept { return impl_->receiver().ring().slot_size; }
std::uint32_t Receiver::max_payload() const noexcept { return slot_size() - std::uint32_t{wire::kSlotHeaderSize}; }
bool Receiver::huge_pages() const noexcept { return impl_->receiver().huge_pages(); }
bool Receiver::memory_windows() const noexcept { return impl_->receiver().memory_windows(); }
const StreamFormat* Receiver::format(std::uint8_t flow) const noexcept { return impl_->receiver().format(flow); }
std::uint32_t Receiver::slot_numbers() const noexcept {
    return impl_->paths ? impl_->paths->slot_numbers() : slot_capacity(impl_->rx->ring());
}
std::vector<PathReport> Receiver::paths() const { return impl_->paths ? impl_->paths->report() : std::vector<PathReport>{}; }
void Receiver::paths(std::vector<PathReport>& into) const {
    if (impl_->paths) {
        impl_->paths->report(into);
    } else {
        into.clear();
    }
}

} // namespace rdmastream
