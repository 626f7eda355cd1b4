// SPDX-License-Identifier: LGPL-2.1-or-later
// A GstAllocator whose memory is registered with the NIC for one Sender:
// rdmasink puts it in the buffer pool it offers upstream, so upstream
// renders frames straight into memory the NIC reads (no copy).
//
// Each GstMemory is its own FrameMemory from the Sender's MemoryDomain,
// made when the pool fills (not per frame: the pool recycles buffers). A
// FrameMemory keeps its registration alive past the Sender, so pool buffers
// upstream frees after rdmasink has stopped stay valid until then.
#pragma once

#include "rdmastream/memory.hpp"

#include <gst/gst.h>

#include <cstddef>

G_BEGIN_DECLS
#define GST_TYPE_RDMA_ALLOCATOR (gst_rdma_allocator_get_type())
G_DECLARE_FINAL_TYPE(GstRdmaAllocator, gst_rdma_allocator, GST, RDMA_ALLOCATOR, GstAllocator)
G_END_DECLS

namespace rdmastream::gst {

inline constexpr const char* kRdmaMemoryType = "RdmaMemory";

// Allocates from `domain` (a Sender's memory()).
GstAllocator* rdma_allocator_new(MemoryDomain domain);

// The FrameMemory `mem` lies in, if it is from `allocator` (what a send
// from it names), and where `mem`'s bytes start in it. nullptr when the
// memory is not from that allocator (then it must be copied).
const FrameMemory* rdma_memory_lookup(GstMemory* mem, GstAllocator* allocator, const std::byte** data);

} // namespace rdmastream::gst
