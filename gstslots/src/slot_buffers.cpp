#include "rdmastream_gst/slot_buffers.hpp"

#include <gst/video/video.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace rdmastream::gst {
namespace {

// Where a recycled object finds its owner: set once when it is made, read
// by its dispose hook (a lookup, no allocation).
GQuark slot_quark() {
    static const GQuark q = g_quark_from_static_string("rdmastream-slot");
    return q;
}
GQuark shell_quark() {
    static const GQuark q = g_quark_from_static_string("rdmastream-shell");
    return q;
}

// A shell keeps one GstVideoMeta (set_video_meta rewrites it per frame); every
// other meta was downstream's and goes with the frame.
gboolean strip_meta(GstBuffer*, GstMeta** meta, gpointer kept_video_meta) {
    auto* kept = static_cast<bool*>(kept_video_meta);
    if ((*meta)->info->api == GST_VIDEO_META_API_TYPE && !*kept) {
        *kept = true;
        return TRUE;
    }
    // A pool's metas are locked against removal; on our own shell that
    // lock is downstream's, not ours to honour.
    (*meta)->flags = static_cast<GstMetaFlags>((*meta)->flags & ~GST_META_FLAG_LOCKED);
    *meta = nullptr;
    return TRUE;
}

} // namespace

SlotBuffers::SlotBuffers(std::uint32_t slots, std::shared_ptr<void> ring, std::shared_ptr<Waker> waker)
    : ring_(std::move(ring)), waker_(std::move(waker)), slots_(std::make_unique<Slot[]>(slots)), slot_count_(slots) {
    for (std::uint32_t i = 0; i < slots; ++i) {
        slots_[i].owner = this;
        slots_[i].index = static_cast<std::uint16_t>(i);
    }
    freed_.reserve(slots);
    draining_.reserve(slots);
}

// Runs when nothing is downstream any more: every memory and shell is home.
SlotBuffers::~SlotBuffers() {
    for (GstBuffer* shell : free_shells_) {
        shell->mini_object.dispose = nullptr; // free for real
        gst_buffer_unref(shell);
    }
    for (std::uint32_t i = 0; i < slot_count_; ++i) {
        if (GstMemory* m = slots_[i].memory) {
            m->mini_object.dispose = nullptr;
            gst_memory_unref(m);
        }
    }
}

void SlotBuffers::unref() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        delete this;
    }
}

// The last reference to a slot's memory went, on any thread: the slot is
// free. The memory is revived for the slot's next frame.
gboolean SlotBuffers::memory_disposed(GstMiniObject* obj) {
    auto* s = static_cast<Slot*>(gst_mini_object_get_qdata(obj, slot_quark()));
    SlotBuffers* self = s->owner;
    gst_mini_object_ref(obj);
    {
        std::lock_guard lock(self->mutex_);
        s->memory = reinterpret_cast<GstMemory*>(obj);
        self->freed_.push_back(s->index); // capacity = slots: never allocates
    }
    self->returned_.fetch_add(1, std::memory_order_relaxed);
    if (self->waker_) {
        self->waker_->wake(); // a syscall only if the receiving thread sleeps
    }
    self->unref(); // may delete self, and obj with it: touch neither after
    return FALSE;
}

// Downstream let go of a buffer we pushed, on any thread.
gboolean SlotBuffers::shell_disposed(GstMiniObject* obj) {
    auto* self = static_cast<SlotBuffers*>(gst_mini_object_get_qdata(obj, shell_quark()));
    auto* shell = reinterpret_cast<GstBuffer*>(obj);
    gst_mini_object_ref(obj);
    // The memory's own hook frees the slot, unless a copy downstream still
    // holds the memory: then the slot stays busy until that copy goes.
    gst_buffer_remove_all_memory(shell);
    bool kept_video_meta = false;
    gst_buffer_foreach_meta(shell, strip_meta, &kept_video_meta);
    {
        std::lock_guard lock(self->mutex_);
        self->free_shells_.push_back(shell); // capacity >= shells made: never allocates
    }
    self->unref(); // may delete self, and the shell with it
    return FALSE;
}

// Wraps a slot's payload area, the first time the slot carries a frame and
// again after the ring grew (new memory, larger slots) or the owner's idea
// of the slot's room changed.
void SlotBuffers::wrap_slot_st(Slot& s, const std::byte* data, std::size_t room) {
    if (s.data != nullptr && s.memory == nullptr) {
        // The transport hands out a slot only after its credit came back,
        // i.e. after the memory came home; anything else is a bug.
        throw std::logic_error("SlotBuffers: slot " + std::to_string(s.index) +
                               " carries a new frame while downstream still holds its last one");
    }
    if (s.memory != nullptr) { // the ring moved or the room changed: retire the old wrapper
        s.memory->mini_object.dispose = nullptr;
        gst_memory_unref(s.memory);
    }
    // Writable: the sender writes a slot again only after its credit came
    // back, i.e. after this memory's last reference went, so an element
    // drawing in place (textoverlay) races nothing and need not copy the
    // frame first. (Shared memory, e.g. after a tee, is still copied by
    // GStreamer before a write, as for any buffer.)
    s.memory = gst_memory_new_wrapped(static_cast<GstMemoryFlags>(0), const_cast<std::byte*>(data), room, 0, 0, nullptr,
                                      nullptr);
    gst_mini_object_set_qdata(&s.memory->mini_object, slot_quark(), &s, nullptr);
    s.memory->mini_object.dispose = memory_disposed;
    s.data = data;
    s.room = room;
    ++memories_made_;
}

GstBuffer* SlotBuffers::new_shell_st() {
    GstBuffer* shell = gst_buffer_new();
    gst_mini_object_set_qdata(&shell->mini_object, shell_quark(), this, nullptr);
    shell->mini_object.dispose = shell_disposed;
    ++shells_made_;
    std::lock_guard lock(mutex_);
    free_shells_.reserve(shells_made_); // room for every shell to come home
    return shell;
}

GstBuffer* SlotBuffers::wrap_st(std::uint16_t slot, std::span<const std::byte> payload, std::size_t room) {
    Slot& s = slots_[slot];
    if (s.memory == nullptr || s.data != payload.data() || s.room != room) {
        wrap_slot_st(s, payload.data(), room);
    }
    GstMemory* memory = std::exchange(s.memory, nullptr); // downstream's until memory_disposed
    gst_memory_resize(memory, -static_cast<gssize>(memory->offset), payload.size());
    GstBuffer* shell = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (!free_shells_.empty()) {
            shell = free_shells_.back();
            free_shells_.pop_back();
        }
    }
    if (shell == nullptr) {
        shell = new_shell_st();
    }
    refs_.fetch_add(2, std::memory_order_relaxed); // the memory and the shell
    // Downstream may have changed a writable buffer's fields: start clean.
    GST_BUFFER_FLAGS(shell) = 0;
    GST_BUFFER_PTS(shell) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DTS(shell) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_DURATION(shell) = GST_CLOCK_TIME_NONE;
    GST_BUFFER_OFFSET(shell) = GST_BUFFER_OFFSET_NONE;
    GST_BUFFER_OFFSET_END(shell) = GST_BUFFER_OFFSET_NONE;
    gst_buffer_append_memory(shell, memory); // our reference goes with it
    ++wrapped_;
    return shell;
}

std::span<const std::uint16_t> SlotBuffers::take_freed_st() {
    draining_.clear();
    {
        std::lock_guard lock(mutex_);
        freed_.swap(draining_); // both have capacity = slots: no allocation either way
    }
    return draining_;
}

} // namespace rdmastream::gst
