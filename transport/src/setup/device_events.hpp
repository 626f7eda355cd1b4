// SPDX-License-Identifier: LGPL-2.1-or-later
// A device's async events (ibv_get_async_event), read once and handed to
// the connection each one concerns.
//
// An ibv_context has one async-event fd, shared by every connection on the
// device (librdmacm opens one context per device for the whole process). A
// reader cannot peek: an event read is gone from the fd. So one dispatcher
// per context reads them, acks each at once (a copy is all anyone keeps:
// an unacked event would block destroying its QP or CQ) and routes it: a QP
// event to the connection that owns the QP, a CQ event to the one that owns
// the CQ, port and device events to every connection on the device. Each
// connection takes its own from its DeviceEventSubscription.
//
// Threads. Connections on one device may be driven from one thread (a
// fan-out's members) or from several (two GStreamer elements in one
// process). Whoever finds the fd readable drains it, under the dispatcher's
// mutex, and may so read another thread's event: it then sits in that
// connection's small queue (its own mutex) and the connection's Waker is
// woken, which writes its eventfd only if that thread sleeps. A mutex, not
// a lock-free queue: it is taken only when an async event arrives (rare:
// a port flap, a failed QP) or is collected, never per frame, so it costs
// the data path nothing, and it keeps drain-then-collect simple to reason
// about: a collector that takes the dispatcher's mutex after another
// thread's drain sees everything that drain routed.
//
// Hot path: nothing here runs per frame. A poller looks only when the fd is
// readable or its subscription has events pending (pending(): a relaxed
// atomic load, no lock, no syscall).
#pragma once

#include "rdmastream/waker.hpp"

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rdmastream {

// An async event, copied out of ibv_async_event (which is acked at once).
struct DeviceEvent {
    ibv_event_type type{};
    // The QP, CQ, SRQ or WQ the event names: only compared, never used.
    const void* element = nullptr;
    std::uint8_t port = 0; // a port event's port
    // When it was read off the device (by whichever thread): a port outage
    // is timed from here, not from when its connection looked.
    std::chrono::steady_clock::time_point read_at{};
};

// What an event is about, which decides who gets it.
enum class EventScope { kQp, kCq, kOther, kPort, kDevice };
EventScope scope_of(ibv_event_type type) noexcept;
// QP or CQ errors and a device that failed: the connection is gone.
bool ends_connection(ibv_event_type type) noexcept;
// The event as ibv_get_async_event left it, copied.
DeviceEvent copy_event(const ibv_async_event& ev) noexcept;

class DeviceEventSubscription;

// One per device context. Made through of(); lives while a subscription
// (or anyone else) holds it.
class DeviceEventDispatcher {
public:
    // Reads one event if the device holds one, acks it, returns the copy;
    // nullopt when there is none. Throws on a read that fails otherwise.
    using Source = std::function<std::optional<DeviceEvent>()>;

    // The dispatcher of `ctx`'s events, made on first use (its async fd
    // becomes non-blocking). Thread-safe.
    static std::shared_ptr<DeviceEventDispatcher> of(ibv_context* ctx);

    // `fd`: readable when the source has events (-1: none to poll, as in
    // tests that drive drain() by hand).
    DeviceEventDispatcher(std::string device_name, int fd, Source source);
    DeviceEventDispatcher(const DeviceEventDispatcher&) = delete;
    DeviceEventDispatcher& operator=(const DeviceEventDispatcher&) = delete;

    int fd() const noexcept { return fd_; }
    const std::string& device_name() const noexcept { return device_name_; }

    // Reads every event the device holds now and routes each; any thread.
    // Returns how many it read.
    std::size_t drain();

private:
    friend class DeviceEventSubscription;
    void add(DeviceEventSubscription* s);
    void remove(DeviceEventSubscription* s) noexcept;
    void route(const DeviceEvent& ev); // under mutex_

    const std::string device_name_;
    const int fd_;
    const Source source_;
    std::mutex mutex_; // reading the source and the subscriber list
    std::vector<DeviceEventSubscription*> subscribers_;
};

// One connection's share of its device's events: those of its QP and CQ,
// and every port and device event. Registered from construction to
// destruction (destroy it before the QP and CQ it names). Neither copied
// nor moved: the dispatcher points at it.
class DeviceEventSubscription {
public:
    DeviceEventSubscription(std::shared_ptr<DeviceEventDispatcher> dispatcher, const void* qp, const void* cq);
    ~DeviceEventSubscription();
    DeviceEventSubscription(const DeviceEventSubscription&) = delete;
    DeviceEventSubscription& operator=(const DeviceEventSubscription&) = delete;

    // The device's fd: readable when events wait to be read by anyone.
    int device_fd() const noexcept { return dispatcher_->fd(); }
    const std::string& device_name() const noexcept { return dispatcher_->device_name(); }
    // Woken when an event is routed here: its fd wakes a sleep, pending()
    // says so to a spinner.
    Waker& waker() noexcept { return waker_; }
    bool pending() const noexcept { return waker_.pending(); }

    // Drains the device (whoever's events are there), then moves this
    // connection's events into `out` (cleared first), oldest first.
    void collect(std::vector<DeviceEvent>& out);

private:
    friend class DeviceEventDispatcher;
    void deliver(const DeviceEvent& ev); // the dispatcher, under its mutex

    std::shared_ptr<DeviceEventDispatcher> dispatcher_; // lives while we do
    const void* qp_;
    const void* cq_;
    std::mutex mutex_; // queue_
    // Unbounded, but it only grows by events for this connection and the
    // device's port events between two looks: a handful.
    std::vector<DeviceEvent> queue_;
    Waker waker_;
};

} // namespace rdmastream
