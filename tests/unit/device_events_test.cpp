// SPDX-License-Identifier: LGPL-2.1-or-later
// The device's async events reach the connection they concern, once: a QP
// or CQ event its owner only, port and device events every connection, none
// lost when another connection (or another thread) happens to read them.
// The dispatcher runs as in the transport; only the device under it is a
// queue of events (ibv_get_async_event needs a NIC that fails on request).
#include "setup/device_events.hpp"

#include <poll.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

using rdmastream::DeviceEvent;
using rdmastream::DeviceEventDispatcher;
using rdmastream::DeviceEventSubscription;

namespace {

// A device's event queue: each read takes (and so acks) one event.
struct FakeDevice {
    std::mutex mutex;
    std::deque<DeviceEvent> events;
    std::atomic<int> acked{0};

    void raise(DeviceEvent ev) {
        const std::lock_guard lock(mutex);
        events.push_back(ev);
    }
    std::shared_ptr<DeviceEventDispatcher> dispatcher() {
        return std::make_shared<DeviceEventDispatcher>("fake0", -1, [this]() -> std::optional<DeviceEvent> {
            const std::lock_guard lock(mutex);
            if (events.empty()) return std::nullopt;
            const DeviceEvent ev = events.front();
            events.pop_front();
            ++acked;
            return ev;
        });
    }
};

// Stand-ins for QPs and CQs: only their addresses matter.
int qp_a, qp_b, cq_a, cq_b;

std::vector<DeviceEvent> collect(DeviceEventSubscription& s) {
    std::vector<DeviceEvent> out;
    s.collect(out);
    return out;
}

} // namespace

TEST(DeviceEvents, QpAndCqEventsGoToTheirOwnerOnly) {
    FakeDevice dev;
    auto d = dev.dispatcher();
    DeviceEventSubscription a(d, &qp_a, &cq_a);
    DeviceEventSubscription b(d, &qp_b, &cq_b);
    dev.raise({IBV_EVENT_QP_FATAL, &qp_b, 0});
    dev.raise({IBV_EVENT_CQ_ERR, &cq_a, 0});
    // a looks first and reads both; b's fatal event waits for b.
    const auto got_a = collect(a);
    ASSERT_EQ(got_a.size(), 1u);
    EXPECT_EQ(got_a[0].type, IBV_EVENT_CQ_ERR);
    EXPECT_TRUE(b.pending());
    const auto got_b = collect(b);
    ASSERT_EQ(got_b.size(), 1u);
    EXPECT_EQ(got_b[0].type, IBV_EVENT_QP_FATAL);
    EXPECT_EQ(got_b[0].element, &qp_b);
    EXPECT_TRUE(collect(a).empty());
    EXPECT_TRUE(collect(b).empty());
    EXPECT_EQ(dev.acked, 2);
}

TEST(DeviceEvents, PortAndDeviceEventsGoToEveryConnection) {
    FakeDevice dev;
    auto d = dev.dispatcher();
    DeviceEventSubscription a(d, &qp_a, &cq_a);
    DeviceEventSubscription b(d, &qp_b, &cq_b);
    dev.raise({IBV_EVENT_PORT_ERR, nullptr, 1});
    dev.raise({IBV_EVENT_DEVICE_FATAL, nullptr, 0});
    for (DeviceEventSubscription* s : {&a, &b}) {
        const auto got = collect(*s);
        ASSERT_EQ(got.size(), 2u);
        EXPECT_EQ(got[0].type, IBV_EVENT_PORT_ERR);
        EXPECT_EQ(got[0].port, 1);
        EXPECT_EQ(got[1].type, IBV_EVENT_DEVICE_FATAL);
    }
    EXPECT_EQ(dev.acked, 2); // read (and acked) once, delivered twice
}

TEST(DeviceEvents, EventsOfNoConnectionAreReadAndDropped) {
    FakeDevice dev;
    auto d = dev.dispatcher();
    DeviceEventSubscription a(d, &qp_a, &cq_a);
    {
        DeviceEventSubscription gone(d, &qp_b, &cq_b);
    }
    dev.raise({IBV_EVENT_QP_FATAL, &qp_b, 0}); // a connection already gone
    dev.raise({IBV_EVENT_SRQ_ERR, &qp_b, 0});  // no SRQ is ours
    EXPECT_TRUE(collect(a).empty());
    EXPECT_EQ(dev.acked, 2);
    EXPECT_EQ(d->drain(), 0u); // nothing left behind on the device
}

TEST(DeviceEvents, TheSubscriptionKeepsItsDispatcher) {
    FakeDevice dev;
    std::weak_ptr<DeviceEventDispatcher> weak;
    {
        auto sub = [&] {
            auto d = dev.dispatcher();
            weak = d;
            return std::make_unique<DeviceEventSubscription>(d, &qp_a, &cq_a);
        }();
        EXPECT_FALSE(weak.expired());
        dev.raise({IBV_EVENT_QP_FATAL, &qp_a, 0});
        EXPECT_EQ(collect(*sub).size(), 1u);
    }
    EXPECT_TRUE(weak.expired());
}

// Another thread reads our event while we sleep: the subscription's Waker
// wakes us (a poll on its fd), and the event is there when we look.
TEST(DeviceEvents, AnEventReadByAnotherThreadWakesItsOwner) {
    FakeDevice dev;
    auto d = dev.dispatcher();
    DeviceEventSubscription a(d, &qp_a, &cq_a);
    DeviceEventSubscription b(d, &qp_b, &cq_b);
    std::atomic<bool> asleep{false};
    std::vector<DeviceEvent> got;
    std::thread owner([&] {
        ASSERT_TRUE(b.waker().sleep_begin());
        asleep = true;
        pollfd pfd{b.waker().fd(), POLLIN, 0};
        const int rc = ::poll(&pfd, 1, 10000);
        b.waker().sleep_end((pfd.revents & POLLIN) != 0);
        EXPECT_EQ(rc, 1) << "not woken within 10 s";
        b.collect(got);
    });
    while (!asleep) std::this_thread::yield();
    dev.raise({IBV_EVENT_QP_FATAL, &qp_b, 0});
    EXPECT_TRUE(collect(a).empty()); // a's thread drains the device: the event is b's
    owner.join();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].type, IBV_EVENT_QP_FATAL);
}

// Two threads draining and collecting at once, events for both raised
// meanwhile: each arrives exactly once, at its owner, in order.
TEST(DeviceEvents, ConcurrentReadersLoseAndDuplicateNothing) {
    FakeDevice dev;
    auto d = dev.dispatcher();
    DeviceEventSubscription a(d, &qp_a, &cq_a);
    DeviceEventSubscription b(d, &qp_b, &cq_b);
    constexpr int kEach = 2000;
    std::atomic<bool> raised{false};
    const auto reader = [&](DeviceEventSubscription& s, const void* own, std::vector<int>& seen) {
        std::vector<DeviceEvent> out;
        for (;;) {
            const bool last = raised.load();
            s.collect(out);
            for (const DeviceEvent& ev : out) {
                EXPECT_EQ(ev.element, own);
                seen.push_back(ev.port); // the sequence number, in the port field
            }
            if (last && out.empty()) return;
        }
    };
    std::vector<int> seen_a, seen_b;
    std::thread ta([&] { reader(a, &qp_a, seen_a); });
    std::thread tb([&] { reader(b, &qp_b, seen_b); });
    for (int i = 0; i < kEach; ++i) {
        dev.raise({IBV_EVENT_COMM_EST, &qp_a, static_cast<std::uint8_t>(i)});
        dev.raise({IBV_EVENT_COMM_EST, &qp_b, static_cast<std::uint8_t>(i)});
    }
    raised = true;
    ta.join();
    tb.join();
    ASSERT_EQ(seen_a.size(), static_cast<std::size_t>(kEach));
    ASSERT_EQ(seen_b.size(), static_cast<std::size_t>(kEach));
    for (int i = 0; i < kEach; ++i) {
        EXPECT_EQ(seen_a[i], i % 256);
        EXPECT_EQ(seen_b[i], i % 256);
    }
    EXPECT_EQ(dev.acked, 2 * kEach);
}
