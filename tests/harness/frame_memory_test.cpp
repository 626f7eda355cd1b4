// SPDX-License-Identifier: LGPL-2.1-or-later
// Frame memory on two devices (docs/design/two-paths.md, Decision 2): one
// mapping, registered on each path's device, written from over both paths
// with each device's own key and no copy on the sender; a device added after
// the memory was made registers it before its first send.
#include "stream_pair.hpp"

#include "memory/frame_memory_impl.hpp"
#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace rdmastream::harness {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kFrame = 4096;

PageRegistrar registrar(FrameSender& tx) {
    return [&tx](std::span<std::byte> pages, std::size_t locked) { return tx.register_pages(pages, locked, 0); };
}

std::span<const std::byte> fill(const FrameMemory::Impl& m, std::size_t at, unsigned char seed) {
    auto bytes = m.pages.bytes().subspan(at * kFrame, kFrame);
    for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = std::byte(static_cast<unsigned char>(seed + k * 7));
    return bytes;
}

// The next frame of `rx`, its payload compared with `sent`.
void expect_frame(FrameReceiver& rx, std::span<const std::byte> sent) {
    auto f = rx.next(5s);
    ASSERT_TRUE(f.has_value());
    ASSERT_EQ(f->payload.size(), sent.size());
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), f->payload.begin()));
    rx.release(f->slot);
}

TEST(FrameMemory, OneMappingWrittenOverTwoDevicesWithEachDevicesKey) {
    SenderOptions o;
    StreamPair a = connect_pair(ring(4), o);
    StreamPair b = connect_pair(ring(4), o);
    auto domain = std::make_shared<MemoryDomain::Impl>(registrar(*a.tx));

    // Made while the domain has one device; the second registers it.
    std::unique_ptr<FrameMemory::Impl> early = domain->allocate(domain, 2 * kFrame);
    ASSERT_EQ(domain->add_device(registrar(*b.tx)), 1u);
    std::unique_ptr<FrameMemory::Impl> late = domain->allocate(domain, 2 * kFrame);

    const std::uint64_t copied_a = a.fabric.copied_bytes(), copied_b = b.fabric.copied_bytes();
    std::vector<std::span<const std::byte>> frames{fill(*early, 0, 1), fill(*early, 1, 2), fill(*late, 0, 3),
                                                   fill(*late, 1, 4)};
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const FrameMemory::Impl& m = i < 2 ? *early : *late;
        ASSERT_EQ(a.tx->send(frames[i], m.lkey(0), {}, i, 5s), i);
        ASSERT_EQ(b.tx->send(frames[i], m.lkey(1), {}, i, 5s), i);
        expect_frame(*a.rx, frames[i]);
        expect_frame(*b.rx, frames[i]);
    }
    // Each device moved each frame once, as one path alone does: header and
    // payload, straight from the one mapping.
    const std::uint64_t per_path = frames.size() * (kFrame + wire::kSlotHeaderSize);
    EXPECT_GE(a.fabric.copied_bytes() - copied_a, per_path);
    EXPECT_EQ(a.fabric.copied_bytes() - copied_a, b.fabric.copied_bytes() - copied_b);
    a.tx->finish(5s);
    b.tx->finish(5s);
}

TEST(FrameMemory, AKeyOfOneDeviceIsRefusedOnTheOther) {
    SenderOptions o;
    StreamPair a = connect_pair(ring(4), o);
    StreamPair b = connect_pair(ring(4), o);
    auto domain = std::make_shared<MemoryDomain::Impl>(registrar(*a.tx));
    std::unique_ptr<FrameMemory::Impl> m = domain->allocate(domain, kFrame);
    // Device A's key on device B: the NIC refuses the read (a local
    // protection error), which is why every path takes its own device's key.
    EXPECT_THROW(
        {
            b.tx->send(fill(*m, 0, 9), m->lkey(0), {}, 0, 5s);
            b.tx->finish(5s); // waits for the frame's completion: a failed one throws
        },
        ConnectionError);
}

TEST(FrameMemory, GoneMemoryLeavesTheDomainBeforeAnotherDeviceComes) {
    SenderOptions o;
    StreamPair a = connect_pair(ring(4), o);
    StreamPair b = connect_pair(ring(4), o);
    auto domain = std::make_shared<MemoryDomain::Impl>(registrar(*a.tx));
    std::size_t registered_on_b = 0;
    domain->allocate(domain, kFrame).reset(); // gone: nothing to register later
    auto kept = domain->allocate(domain, kFrame);
    domain->add_device([&](std::span<std::byte> pages, std::size_t locked) {
        ++registered_on_b;
        return b.tx->register_pages(pages, locked, 0);
    });
    EXPECT_EQ(registered_on_b, 1u);
    // Paths that came back on devices made again: up to kMaxMemoryDevices, then refused by name.
    for (std::size_t d = 2; d < kMaxMemoryDevices; ++d) EXPECT_EQ(domain->add_device(registrar(*b.tx)), d);
    try {
        domain->add_device(registrar(*b.tx));
        ADD_FAILURE() << "a device past kMaxMemoryDevices was taken";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("cannot come back on yet another device"), std::string::npos) << e.what();
    }
}

// A path's device went away (rxe removed): every registration on it goes,
// and its registrar (which holds the device's PD), so that the kernel can
// take the device; the index serves the device that comes back.
TEST(FrameMemory, ARemovedDeviceLetsGoOfEveryRegistrationAndItsIndexServesTheNext) {
    SenderOptions o;
    StreamPair a = connect_pair(ring(4), o);
    StreamPair b = connect_pair(ring(4), o);
    auto domain = std::make_shared<MemoryDomain::Impl>(registrar(*a.tx));
    auto live_on_b = std::make_shared<int>(0); // registrations on B not yet deregistered
    auto counted = [&](std::span<std::byte> pages, std::size_t locked) {
        PageRegistration r = b.tx->register_pages(pages, locked, 0);
        ++*live_on_b;
        r.keep = std::shared_ptr<void>(nullptr, [live_on_b, keep = r.keep](void*) { --*live_on_b; });
        return r;
    };
    auto m1 = domain->allocate(domain, kFrame);
    auto token = std::make_shared<int>(); // lives as long as B's registrar (as its PD would)
    const std::weak_ptr<int> registrar_alive = token;
    ASSERT_EQ(domain->add_device([counted, token = std::move(token)](std::span<std::byte> p, std::size_t l) {
        return counted(p, l);
    }),
              1u);
    auto m2 = domain->allocate(domain, kFrame);
    EXPECT_EQ(*live_on_b, 2);

    domain->remove_device(1);
    EXPECT_EQ(*live_on_b, 0);
    EXPECT_TRUE(registrar_alive.expired());
    EXPECT_EQ(m1->lkey(1), 0u);
    auto m3 = domain->allocate(domain, kFrame); // registered on A only now
    EXPECT_EQ(*live_on_b, 0);

    // B back, on the freed index: every live memory registered there again.
    ASSERT_EQ(domain->add_device(registrar(*b.tx)), 1u);
    for (const auto* m : {m1.get(), m2.get(), m3.get()}) EXPECT_NE(m->lkey(1), 0u);
    ASSERT_EQ(b.tx->send(fill(*m3, 0, 5), m3->lkey(1), {}, 0, 5s), 0u);
    expect_frame(*b.rx, fill(*m3, 0, 5));
    b.tx->finish(5s);
    a.tx->finish(5s);
}

} // namespace
} // namespace rdmastream::harness
