// SPDX-License-Identifier: LGPL-2.1-or-later
#include "setup/device_events.hpp"

#include "rdmastream/error.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>
#include <utility>

namespace rdmastream {

EventScope scope_of(ibv_event_type type) noexcept {
    switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: return EventScope::kQp;
    case IBV_EVENT_CQ_ERR: return EventScope::kCq;
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
    case IBV_EVENT_GID_CHANGE: return EventScope::kPort;
    case IBV_EVENT_DEVICE_FATAL: return EventScope::kDevice;
    default: return EventScope::kOther; // SRQ and WQ events: we make neither
    }
}

bool ends_connection(ibv_event_type type) noexcept {
    switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_DEVICE_FATAL: return true;
    default: return false;
    }
}

DeviceEvent copy_event(const ibv_async_event& ev) noexcept {
    DeviceEvent out;
    out.type = ev.event_type;
    switch (scope_of(ev.event_type)) {
    case EventScope::kQp: out.element = ev.element.qp; break;
    case EventScope::kCq: out.element = ev.element.cq; break;
    case EventScope::kPort: out.port = static_cast<std::uint8_t>(ev.element.port_num); break;
    case EventScope::kOther: out.element = ev.element.srq; break; // or .wq: the same union's pointer
    case EventScope::kDevice: break;
    }
    return out;
}

namespace {
// The real source: one ibv_get_async_event on a non-blocking fd.
std::optional<DeviceEvent> read_event(ibv_context* ctx) {
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx, &ev) != 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return std::nullopt;
        }
        throw SystemError("ibv_get_async_event", errno);
    }
    const DeviceEvent copy = copy_event(ev);
    ibv_ack_async_event(&ev); // once, here: nobody else ever holds the raw event
    return copy;
}
} // namespace

std::shared_ptr<DeviceEventDispatcher> DeviceEventDispatcher::of(ibv_context* ctx) {
    // Keyed by context: librdmacm gives every id on a device the same one.
    // Entries expire with their last subscription; one per device at most.
    static std::mutex registry_mutex;
    static std::unordered_map<ibv_context*, std::weak_ptr<DeviceEventDispatcher>> registry;
    const std::lock_guard lock(registry_mutex);
    if (auto live = registry[ctx].lock()) {
        return live;
    }
    const int flags = fcntl(ctx->async_fd, F_GETFL);
    if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        throw SystemError("fcntl(O_NONBLOCK) on the device async event fd", errno);
    }
    auto made = std::make_shared<DeviceEventDispatcher>(ibv_get_device_name(ctx->device), ctx->async_fd,
                                                        [ctx] { return read_event(ctx); });
    registry[ctx] = made;
    return made;
}

DeviceEventDispatcher::DeviceEventDispatcher(std::string device_name, int fd, Source source)
    : device_name_(std::move(device_name)), fd_(fd), source_(std::move(source)) {}

std::size_t DeviceEventDispatcher::drain() {
    const std::lock_guard lock(mutex_);
    std::size_t n = 0;
    while (std::optional<DeviceEvent> ev = source_()) {
        ev->read_at = std::chrono::steady_clock::now(); // vDSO: no syscall
        route(*ev);
        ++n;
    }
    return n;
}

void DeviceEventDispatcher::route(const DeviceEvent& ev) {
    switch (scope_of(ev.type)) {
    case EventScope::kQp:
    case EventScope::kCq: {
        // One owner. None: a connection already gone (its late events
        // concern nobody) or a QP made outside the transport.
        const bool qp = scope_of(ev.type) == EventScope::kQp;
        const auto owner = std::find_if(subscribers_.begin(), subscribers_.end(), [&](const DeviceEventSubscription* s) {
            return (qp ? s->qp_ : s->cq_) == ev.element;
        });
        if (owner != subscribers_.end()) (*owner)->deliver(ev);
        return;
    }
    case EventScope::kPort:
    case EventScope::kDevice:
        for (DeviceEventSubscription* s : subscribers_) s->deliver(ev);
        return;
    case EventScope::kOther: return; // SRQs and WQs: the transport makes none
    }
}

void DeviceEventDispatcher::add(DeviceEventSubscription* s) {
    const std::lock_guard lock(mutex_);
    subscribers_.push_back(s);
}

void DeviceEventDispatcher::remove(DeviceEventSubscription* s) noexcept {
    const std::lock_guard lock(mutex_);
    std::erase(subscribers_, s);
}

DeviceEventSubscription::DeviceEventSubscription(std::shared_ptr<DeviceEventDispatcher> dispatcher, const void* qp,
                                                 const void* cq)
    : dispatcher_(std::move(dispatcher)), qp_(qp), cq_(cq) {
    dispatcher_->add(this);
}

DeviceEventSubscription::~DeviceEventSubscription() { dispatcher_->remove(this); }

void DeviceEventSubscription::deliver(const DeviceEvent& ev) {
    {
        const std::lock_guard lock(mutex_);
        queue_.push_back(ev);
    }
    waker_.wake();
}

void DeviceEventSubscription::collect(std::vector<DeviceEvent>& out) {
    out.clear();
    // The drain first: it holds the dispatcher's mutex, so an event another
    // thread read and is routing right now is in our queue once it returns.
    dispatcher_->drain();
    waker_.take(); // before the swap: an event delivered after it wakes us again
    const std::lock_guard lock(mutex_);
    std::swap(out, queue_);
}

} // namespace rdmastream
