// SPDX-License-Identifier: LGPL-2.1-or-later
// The one device listing (devices.hpp) and its messages, and the ownership
// rules of rdma_cm events (cm_event_channel.hpp). Native: no RDMA device is
// needed; where this machine has one, the "none here" checks are skipped.
#include "setup/cm_event_channel.hpp"
#include "rdmastream/devices.hpp"
#include "rdmastream/error.hpp"

#include <gtest/gtest.h>

#include <type_traits>

using namespace rdmastream;

namespace {
std::string message_of(const std::string& name) {
    try {
        check_device_exists(name);
    } catch (const UserError& e) {
        return e.what();
    }
    return {};
}
} // namespace

TEST(Devices, TheNoDeviceMessageCarriesTheSoftRoceRecipe) {
    const std::string m = no_device_message("ibv_get_device_list found none");
    EXPECT_NE(m.find("no RDMA device on this machine (ibv_get_device_list found none)"), std::string::npos) << m;
    EXPECT_NE(m.find("rdma link add rxe0 type rxe netdev"), std::string::npos) << m;
    EXPECT_NE(m.find("docs/softroce.md"), std::string::npos) << m;
}

TEST(Devices, AMachineWithoutDevicesSaysSoWhateverTheName) {
    if (!device_names().empty()) GTEST_SKIP() << "this machine has RDMA devices";
    for (const std::string name : {"", "mlx5_9"}) {
        const std::string m = message_of(name);
        EXPECT_NE(m.find("no RDMA device on this machine"), std::string::npos) << m;
        EXPECT_NE(m.find("Soft-RoCE"), std::string::npos) << m;
    }
}

TEST(Devices, AnUnknownNameListsTheDevicesThereAre) {
    const std::vector<std::string> names = device_names();
    if (names.empty()) GTEST_SKIP() << "this machine has no RDMA device";
    const std::string m = message_of("nosuch9");
    EXPECT_NE(m.find("there is no RDMA device nosuch9; this machine has: " + names.front()), std::string::npos) << m;
    EXPECT_EQ(message_of(names.front()), "");
    EXPECT_EQ(message_of(""), "");
}

// A connect request's id is owned by its event: an event cannot be copied
// (two owners), only moved; the error that carries one can be copied, as an
// exception must, and its copies share the one event.
static_assert(!std::is_copy_constructible_v<CmEvent>);
static_assert(!std::is_copy_assignable_v<CmEvent>);
static_assert(std::is_nothrow_move_constructible_v<CmEvent>);
static_assert(std::is_copy_constructible_v<CmEventError>);

TEST(CmEventError, CopiesShareTheEvent) {
    CmEvent ev;
    ev.type = RDMA_CM_EVENT_REJECTED;
    ev.status = 28;
    ev.private_data.bytes[0] = std::byte{7};
    ev.private_data.size = 1;
    const CmEventError e("connecting", std::move(ev));
    const CmEventError copy = e; // the copy is the point
    const CmEventError retold("cannot connect: connecting", e);
    ASSERT_NE(e.event(), nullptr);
    EXPECT_EQ(copy.event(), e.event());
    EXPECT_EQ(retold.event(), e.event());
    EXPECT_STREQ(retold.what(), "cannot connect: connecting");
    EXPECT_EQ(e.event()->type, RDMA_CM_EVENT_REJECTED);
    ASSERT_EQ(e.event()->private_bytes().size(), 1u);
    EXPECT_EQ(e.event()->private_bytes()[0], std::byte{7});
    EXPECT_EQ(e.event()->request, nullptr); // not a connect request: nothing owned
}

TEST(CmEventError, ATimeoutHasNoEvent) {
    const CmEventError e("waiting", std::nullopt);
    EXPECT_EQ(e.event(), nullptr);
}
