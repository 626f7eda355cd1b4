// SPDX-License-Identifier: LGPL-2.1-or-later
// Sender (sender.hpp): opening the sending end through a Door, the one way
// every adapter does it, and the calls, passed to what it opened (one
// receiver or a fan-out: sender_impl.hpp).
#include "stream/sender_impl.hpp"

#include "memory/frame_memory_impl.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <stdexcept>


namespace rdmastream {

SenderOptions sender_options(const SenderConfig& c) {
    SenderOptions o;
    o.policy = c.policy;
    o.on_done = c.on_done;
    o.keepalive = c.keepalive;
    o.ack_limit = c.ack_limit;
    o.poll_mode = c.poll_mode;
    o.device = c.device;
    o.waker = c.waker;
    o.key = c.key;
    o.caller_depth = c.max_in_flight; // signalled often enough for so few (0: the ring's)
    return o;
}

Sender::Sender(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Sender::~Sender() = default;

std::unique_ptr<Sender> Sender::open(Door& door, const SenderConfig& config) {
    Door::Impl& d = door.impl();
    std::unique_ptr<Impl> impl;
    if (config.receivers > 0) {
        if (!d.listener) {
            throw UserError("a fan-out to several receivers listens for them: open it through a listening Door");
        }
        impl = fanout_sender(std::make_unique<DoorClaim>(door.impl_), door.describe(), config);
    } else if (!d.listener) {
        if (auto tx = FrameSender::connect(d.endpoint, sender_options(config), config.open_timeout)) {
            impl = single_sender(std::move(tx), config, nullptr);
        }
    } else {
        auto claim = std::make_unique<DoorClaim>(door.impl_);
        const SenderOptions so = sender_options(config);
        Listener& listener = claim->listener();
        if (auto tx = FrameSender::accept(listener, so, config.open_timeout, door.describe())) {
            impl = single_sender(std::move(tx), config, std::move(claim));
        }
    }
    if (!impl) return nullptr; // woken
    return std::unique_ptr<Sender>(new Sender(std::move(impl)));
}

MemoryDomain Sender::memory() const {
    if (!impl_->domain) {
        // Read by the NIC only (access 0): nobody writes into frame memory remotely.
        impl_->domain = std::make_shared<MemoryDomain::Impl>(
            [pd = impl_->pd()](std::span<std::byte> pages, std::size_t locked) {
                return register_pages(pd, pages, locked, 0);
            });
    }
    return MemoryDomain(impl_->domain);
}

std::size_t Sender::depth(std::uint8_t flow) const noexcept { return flow < kMaxFlows ? impl_->depth(flow) : 0; }
std::uint32_t Sender::max_payload(std::uint8_t flow) const noexcept {
    return flow < kMaxFlows ? impl_->max_payload(flow) : 0;
}

std::optional<std::uint64_t> Sender::send(const FrameMemory& memory, std::span<const std::byte> payload,
                                          const FrameMeta& meta, std::uint64_t cookie,
                                          std::chrono::milliseconds timeout) {
    const FrameMemory::Impl* m = memory.impl();
    if (m == nullptr || !m->holds(payload)) {
        throw UserError("a frame's payload must lie in the FrameMemory it is sent from");
    }
    if (!m->of(impl_->domain.get())) {
        // Another sender's keys would fail on this one's device.
        throw UserError("a frame's FrameMemory must come from this Sender's memory()");
    }
    return impl_->send(payload, *m, meta, cookie, timeout);
}

void Sender::set_format(const StreamFormat& format, std::chrono::milliseconds timeout) {
    impl_->set_format(format, timeout);
}
void Sender::set_clock(const ClockAnchor& anchor, std::chrono::milliseconds timeout) {
    impl_->set_clock(anchor, timeout);
}
void Sender::progress() { impl_->progress(); }
bool Sender::takes_frame_now(std::uint8_t flow) { return flow < kMaxFlows && impl_->takes_frame_now(flow); }
void Sender::skip_frame(std::uint8_t flow) noexcept {
    if (flow < kMaxFlows) impl_->skip_frame(flow);
}
bool Sender::wait_done(std::uint64_t number, std::chrono::milliseconds timeout, std::uint8_t flow) {
    if (flow >= kMaxFlows) throw std::invalid_argument("wait_done: a flow id past 14");
    return impl_->wait_done(number, timeout, flow);
}
void Sender::finish(std::chrono::milliseconds timeout) { impl_->finish(timeout); }
void Sender::stop() noexcept { impl_->stop(); }
StreamStats Sender::stats() const noexcept { return impl_->stats(); }
std::vector<ReceiverReport> Sender::receivers() const { return impl_->receivers(); }
std::vector<PathReport> Sender::paths() const { return impl_->paths(); }
SenderState Sender::state() const noexcept { return impl_->state(); }
std::string Sender::leaving() const { return impl_->leaving(); }
Policy Sender::policy() const noexcept { return impl_->policy(); }
std::string Sender::peer() const { return impl_->peer(); }
std::uint32_t Sender::ring_slots() const noexcept { return impl_->ring_slots(); }
std::uint32_t Sender::ring_slot_size() const noexcept { return impl_->ring_slot_size(); }

} // namespace rdmastream
