// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmaallocator.hpp"

#include "rdmaenums.hpp"

#include <memory>
#include <new>

#undef GST_CAT_DEFAULT // (a unity build may have another file's)
#define GST_CAT_DEFAULT gst_rdma_sink_debug

struct _GstRdmaAllocator {
    GstAllocator parent;
    // Constructed in init, destroyed in finalize: GObject runs no C++
    // constructors or destructors of its own.
    rdmastream::MemoryDomain domain;
};

// GLib's type macros expand to C casts; nothing else here needs the exemption.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
G_DEFINE_TYPE(GstRdmaAllocator, gst_rdma_allocator, GST_TYPE_ALLOCATOR)
#pragma GCC diagnostic pop

namespace {

using rdmastream::FrameMemory;

// A root memory and its shared sub-memories own the frame memory together.
// Made by make_memory, handed to GStreamer as its GstMemory; rdma_free takes
// it back.
struct RdmaMemory {
    GstMemory mem;
    std::shared_ptr<FrameMemory> frame;
};

const FrameMemory& frame_of(GstMemory* mem) { return *reinterpret_cast<RdmaMemory*>(mem)->frame; }

RdmaMemory* make_memory(std::shared_ptr<FrameMemory> frame) {
    auto m = std::make_unique<RdmaMemory>();
    m->frame = std::move(frame);
    return m.release(); // GStreamer's until rdma_free
}

GstMemory* rdma_alloc(GstAllocator* allocator, gsize size, GstAllocationParams* params) {
    auto* self = GST_RDMA_ALLOCATOR(allocator);
    const gsize maxsize = size + params->prefix + params->padding;
    std::shared_ptr<FrameMemory> frame;
    try {
        frame = std::make_shared<FrameMemory>(self->domain.allocate(maxsize));
    } catch (const std::exception& e) {
        GST_ERROR_OBJECT(allocator, "cannot register %" G_GSIZE_FORMAT " bytes: %s", maxsize, e.what());
        return nullptr;
    }
    const bool huge = frame->huge_pages();
    RdmaMemory* m = make_memory(std::move(frame));
    // Pages are aligned far beyond any GstAllocationParams::align.
    gst_memory_init(&m->mem, static_cast<GstMemoryFlags>(params->flags), allocator, nullptr, maxsize,
                    params->align, params->prefix, size);
    GST_DEBUG_OBJECT(allocator, "registered %" G_GSIZE_FORMAT " bytes%s", maxsize, huge ? " on 2 MiB pages" : "");
    return &m->mem;
}

void rdma_free(GstAllocator*, GstMemory* mem) {
    // The frame memory goes with the last memory that shares it.
    const std::unique_ptr<RdmaMemory> owned(reinterpret_cast<RdmaMemory*>(mem));
}

gpointer rdma_map(GstMemory* mem, gsize, GstMapFlags) {
    return frame_of(mem).bytes().data();
}

void rdma_unmap(GstMemory*) {}

GstMemory* rdma_share(GstMemory* mem, gssize offset, gssize size) {
    GstMemory* root = mem->parent != nullptr ? mem->parent : mem;
    if (size == -1) {
        size = static_cast<gssize>(mem->size) - offset;
    }
    RdmaMemory* sub = make_memory(reinterpret_cast<RdmaMemory*>(mem)->frame);
    gst_memory_init(&sub->mem,
                    static_cast<GstMemoryFlags>(GST_MINI_OBJECT_FLAGS(root) | GST_MINI_OBJECT_FLAG_LOCK_READONLY),
                    mem->allocator, root, mem->maxsize, mem->align, mem->offset + static_cast<gsize>(offset),
                    static_cast<gsize>(size));
    return &sub->mem;
}

} // namespace

static void gst_rdma_allocator_finalize(GObject* object) {
    auto* self = GST_RDMA_ALLOCATOR(object);
    std::destroy_at(&self->domain);
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
    new (&self->domain) rdmastream::MemoryDomain();
}

namespace rdmastream::gst {

GstAllocator* rdma_allocator_new(MemoryDomain domain) {
    auto* self = GST_RDMA_ALLOCATOR(g_object_new(GST_TYPE_RDMA_ALLOCATOR, nullptr));
    gst_object_ref_sink(self); // no floating reference: the sink owns it
    self->domain = std::move(domain);
    return GST_ALLOCATOR(self);
}

const FrameMemory* rdma_memory_lookup(GstMemory* mem, GstAllocator* allocator, const std::byte** data) {
    if (mem->allocator != allocator) {
        return nullptr;
    }
    const FrameMemory& frame = frame_of(mem);
    *data = frame.bytes().data() + mem->offset;
    return &frame;
}

} // namespace rdmastream::gst
