// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/slot_ring.hpp"

#include "rdmastream/error.hpp"
#include "call_checks.hpp"

namespace rdmastream {

SlotRing::SlotRing(std::uint32_t slot_count, std::uint32_t slot_size)
    : pages_(std::size_t{slot_count} * slot_size), slot_count_(slot_count), slot_size_(slot_size) {}

std::uint32_t SlotRing::bind_request(std::uint32_t s, ibv_send_wr& wr) const noexcept {
    // The key's low byte is the consumer's to change (IB spec: every bind of
    // a type 2 window gives it a new key); the rest names the window.
    const std::uint32_t key = ibv_inc_rkey(windows_[s]->rkey);
    wr.opcode = IBV_WR_BIND_MW;
    wr.sg_list = nullptr;
    wr.num_sge = 0;
    wr.send_flags = 0;
    wr.bind_mw.mw = windows_[s];
    wr.bind_mw.rkey = key;
    wr.bind_mw.bind_info.mr = regions_[s];
    wr.bind_mw.bind_info.addr = addr() + std::uint64_t{s} * slot_size_;
    wr.bind_mw.bind_info.length = slot_size_;
    wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    return key;
}

void SlotRing::invalidate_request(std::uint32_t s, ibv_send_wr& wr) const noexcept {
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.sg_list = nullptr;
    wr.num_sge = 0;
    wr.invalidate_rkey = windows_[s]->rkey;
}

bool has_type2_windows(ibv_context* ctx) {
    ibv_device_attr attr{};
    check_rc(ibv_query_device(ctx, &attr), "ibv_query_device");
    const auto caps = static_cast<unsigned long long>(attr.device_cap_flags);
    return (caps & IBV_DEVICE_MEM_WINDOW) != 0 &&
           (caps & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
}

} // namespace rdmastream
