// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmaallocator.hpp"

#include "rdmaenums.hpp"
#include "memory/registered_region.hpp"

#include <memory>
#include <new>

#define GST_CAT_DEFAULT gst_rdma_sink_debug

struct _GstRdmaAllocator {
    GstAllocator parent;
    ibv_pd* pd;
    // Constructed in init, destroyed in finalize: GObject runs no C++
    // constructors or destructors of its own.
    std::shared_ptr<void> owner;
};

// GLib's type macros expand to C casts; nothing else here needs the exemption.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
G_DEFINE_TYPE(GstRdmaAllocator, gst_rdma_allocator, GST_TYPE_ALLOCATOR)
#pragma GCC diagnostic pop

namespace {

using rdmastream::RegisteredRegion;

// A root memory and its shared sub-memories own the region together.
// Made by make_memory, handed to GStreamer as its GstMemory; rdma_free takes
// it back.
struct RdmaMemory {
    GstMemory mem;
    std::shared_ptr<RegisteredRegion> region;
};

RegisteredRegion* region_of(GstMemory* mem) {
    return reinterpret_cast<RdmaMemory*>(mem)->region.get();
}

RdmaMemory* make_memory(std::shared_ptr<RegisteredRegion> region) {
    auto m = std::make_unique<RdmaMemory>();
    m->region = std::move(region);
    return m.release(); // GStreamer's until rdma_free
}

GstMemory* rdma_alloc(GstAllocator* allocator, gsize size, GstAllocationParams* params) {
    auto* self = GST_RDMA_ALLOCATOR(allocator);
    const gsize maxsize = size + params->prefix + params->padding;
    std::shared_ptr<RegisteredRegion> region;
    try {
        // Local access only: the NIC reads these pages for the sender's writes.
        region = std::make_shared<RegisteredRegion>(self->pd, maxsize, 0);
    } catch (const std::exception& e) {
        GST_ERROR_OBJECT(allocator, "cannot register %" G_GSIZE_FORMAT " bytes: %s", maxsize, e.what());
        return nullptr;
    }
    const std::uint32_t lkey = region->lkey();
    RdmaMemory* m = make_memory(std::move(region));
    // Pages are aligned far beyond any GstAllocationParams::align.
    gst_memory_init(&m->mem, static_cast<GstMemoryFlags>(params->flags), allocator, nullptr, maxsize,
                    params->align, params->prefix, size);
    GST_DEBUG_OBJECT(allocator, "registered %" G_GSIZE_FORMAT " bytes, lkey 0x%x", maxsize, lkey);
    return &m->mem;
}

void rdma_free(GstAllocator*, GstMemory* mem) {
    // The region goes with the last memory that shares it.
    const std::unique_ptr<RdmaMemory> owned(reinterpret_cast<RdmaMemory*>(mem));
}

gpointer rdma_map(GstMemory* mem, gsize, GstMapFlags) {
    return region_of(mem)->bytes().data();
}

void rdma_unmap(GstMemory*) {}

GstMemory* rdma_share(GstMemory* mem, gssize offset, gssize size) {
    GstMemory* root = mem->parent != nullptr ? mem->parent : mem;
    if (size == -1) {
        size = static_cast<gssize>(mem->size) - offset;
    }
    RdmaMemory* sub = make_memory(reinterpret_cast<RdmaMemory*>(mem)->region);
    gst_memory_init(&sub->mem,
                    static_cast<GstMemoryFlags>(GST_MINI_OBJECT_FLAGS(root) | GST_MINI_OBJECT_FLAG_LOCK_READONLY),
                    mem->allocator, root, mem->maxsize, mem->align, mem->offset + static_cast<gsize>(offset),
                    static_cast<gsize>(size));
    return &sub->mem;
}

} // namespace

static void gst_rdma_allocator_finalize(GObject* object) {
    auto* self = GST_RDMA_ALLOCATOR(object);
    std::destroy_at(&self->owner);
    G_OBJECT_CLASS(gst_rdma_allocator_parent_class)->finalize(object);
}

static void gst_rdma_allocator_class_init(GstRdmaAllocatorClass* klass) {
    G_OBJECT_CLASS(klass)->finalize = gst_rdma_allocator_finalize;
    GST_ALLOCATOR_CLASS(klass)->alloc = rdma_alloc;
    GST_ALLOCATOR_CLASS(klass)->free = rdma_free;
}

static void gst_rdma_allocator_init(GstRdmaAllocator* self) {
    auto* alloc = GST_ALLOCATOR(self);
    alloc->mem_type = rdmastream::gst::kRdmaMemoryType;
    alloc->mem_map = rdma_map;
    alloc->mem_unmap = rdma_unmap;
    alloc->mem_share = rdma_share;
    // mem_copy and mem_is_span keep GStreamer's fallbacks (a copy lands in system memory).
    self->pd = nullptr;
    new (&self->owner) std::shared_ptr<void>();
}

namespace rdmastream::gst {

GstAllocator* rdma_allocator_new(ibv_pd* pd, std::shared_ptr<void> owner) {
    auto* self = GST_RDMA_ALLOCATOR(g_object_new(GST_TYPE_RDMA_ALLOCATOR, nullptr));
    gst_object_ref_sink(self); // no floating reference: the sink owns it
    self->pd = pd;
    self->owner = std::move(owner);
    return GST_ALLOCATOR(self);
}

bool rdma_memory_lookup(GstMemory* mem, GstAllocator* allocator, const std::byte** data, std::uint32_t* lkey) {
    if (mem->allocator != allocator) {
        return false;
    }
    const RegisteredRegion* region = region_of(mem);
    *data = region->bytes().data() + mem->offset;
    *lkey = region->lkey();
    return true;
}

} // namespace rdmastream::gst
