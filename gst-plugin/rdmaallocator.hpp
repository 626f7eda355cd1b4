// SPDX-License-Identifier: LGPL-2.1-or-later
// A GstAllocator whose memory is registered with the NIC on one connection's
// protection domain: rdmasink puts it in the buffer pool it offers upstream,
// so upstream renders frames straight into memory the NIC reads (no copy).
//
// Each GstMemory is its own RegisteredRegion, made when the pool fills (not
// per frame: the pool recycles buffers). The allocator keeps the connection
// that owns the PD alive (`owner`) for as long as any of its memory lives,
// since upstream may free pool buffers after rdmasink has stopped.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <memory>

struct ibv_pd;

G_BEGIN_DECLS
#define GST_TYPE_RDMA_ALLOCATOR (gst_rdma_allocator_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaAllocator, gst_rdma_allocator, GST, RDMA_ALLOCATOR, GstAllocator)
G_END_DECLS

namespace rdmastream::gst {

inline constexpr const char* kRdmaMemoryType = "RdmaMemory";

// `pd` must stay valid while `owner` lives.
GstAllocator* rdma_allocator_new(ibv_pd* pd, std::shared_ptr<void> owner);

// Where `mem` lies in registered memory of `allocator`: its bytes and lkey.
// False when the memory is not from that allocator (then it must be copied).
bool rdma_memory_lookup(GstMemory* mem, GstAllocator* allocator, const std::byte** data, std::uint32_t* lkey);

} // namespace rdmastream::gst
