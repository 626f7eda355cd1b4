// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_gst/slot_buffers.hpp"

#include <gst/video/video.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace rdmastream::gst {

struct SlotBuffers::Home {
    struct Slot {
        GstMemory* memory = nullptr; // ours while the slot is free; nullptr before its first frame
        const std::byte* data = nullptr;
        std::size_t room = 0;
    };

    Home(std::uint32_t slots, std::shared_ptr<void> r, std::shared_ptr<Waker> w)
        : ring(std::move(r)), waker(std::move(w)), slot(slots) {
        freed.reserve(slots);
    }

    const std::shared_ptr<void> ring;
    const std::shared_ptr<Waker> waker;
    std::vector<Slot> slot; // never resized: `memory` is written by the hooks, the rest by the _st thread
    std::atomic<std::uint64_t> returned{0}; // memories home (any thread), at most one per wrap

    std::mutex mutex;
    bool open = true;                    // guarded; false once the owner is gone: what comes home is freed
    std::vector<std::uint16_t> freed;    // guarded; capacity = slots, so pushing never allocates
    std::vector<GstBuffer*> free_shells; // guarded; capacity >= shells made
};

namespace {

// What a memory or a shell knows of its home: set once when it is made,
// deleted by GStreamer with the object.
struct Link {
    std::shared_ptr<SlotBuffers::Home> home;
    std::uint16_t slot = 0; // memories only
};

GQuark link_quark() {
    static const GQuark q = g_quark_from_static_string("rdmastream-slot-buffers");
    return q;
}

void link(GstMiniObject* obj, Link l, GstMiniObjectDisposeFunction hook) {
    gst_mini_object_set_qdata(obj, link_quark(), std::make_unique<Link>(std::move(l)).release(),
                              [](gpointer p) { delete static_cast<Link*>(p); });
    obj->dispose = hook;
}

// For objects a hook took back: freed for real this time.
void free_now(GstMiniObject* obj) {
    obj->dispose = nullptr;
    gst_mini_object_unref(obj);
}

struct Stripping {
    bool kept_video_meta = false;
    bool locked_meta = false;
};

// A shell keeps one GstVideoMeta (set_video_meta rewrites it per frame);
// every other meta was downstream's and goes with the frame. A meta
// downstream locked is not ours to remove: the shell is not re-used then.
gboolean strip_meta(GstBuffer*, GstMeta** meta, gpointer user_data) {
    auto* s = static_cast<Stripping*>(user_data);
    if ((*meta)->info->api == GST_VIDEO_META_API_TYPE && !s->kept_video_meta) {
        s->kept_video_meta = true;
    } else if (GST_META_FLAG_IS_SET(*meta, GST_META_FLAG_LOCKED)) {
        s->locked_meta = true;
    } else {
        *meta = nullptr;
    }
    return TRUE;
}

// The last reference to a slot's memory went, on any thread: the slot is
// free, and the memory is taken back for the slot's next frame.
gboolean memory_came_home(GstMiniObject* obj) {
    const auto* l = static_cast<const Link*>(gst_mini_object_get_qdata(obj, link_quark()));
    // A reference of our own: the owner may go while this runs.
    const std::shared_ptr<SlotBuffers::Home> home = l->home;
    {
        std::lock_guard lock(home->mutex);
        if (!home->open) {
            return TRUE; // GStreamer frees it, and its link to the ring
        }
        gst_mini_object_ref(obj);
        home->slot[l->slot].memory = reinterpret_cast<GstMemory*>(obj);
        home->freed.push_back(l->slot); // capacity = slots: never allocates
    }
    home->returned.fetch_add(1, std::memory_order_relaxed);
    if (home->waker) {
        home->waker->wake(); // a syscall only if the receiving thread sleeps
    }
    return FALSE;
}

// Downstream let go of a buffer we pushed, on any thread.
gboolean shell_came_home(GstMiniObject* obj) {
    const auto* l = static_cast<const Link*>(gst_mini_object_get_qdata(obj, link_quark()));
    const std::shared_ptr<SlotBuffers::Home> home = l->home;
    auto* shell = reinterpret_cast<GstBuffer*>(obj);
    gst_mini_object_ref(obj);
    // The memory's own hook frees the slot, unless a copy downstream still
    // holds the memory: then the slot stays busy until that copy goes.
    gst_buffer_remove_all_memory(shell);
    Stripping s;
    gst_buffer_foreach_meta(shell, strip_meta, &s);
    if (!s.locked_meta) {
        std::lock_guard lock(home->mutex);
        if (home->open) {
            home->free_shells.push_back(shell); // capacity >= shells made: never allocates
            return FALSE;
        }
    }
    free_now(obj);
    return FALSE;
}

} // namespace

SlotBuffers::SlotBuffers(std::uint32_t slots, std::shared_ptr<void> ring, std::shared_ptr<Waker> waker)
    : home_(std::make_shared<Home>(slots, std::move(ring), std::move(waker))) {
    draining_.reserve(slots);
}

// Frees what is home; what is downstream frees itself as it comes home, and
// the last of it lets the ring go.
SlotBuffers::~SlotBuffers() {
    std::lock_guard lock(home_->mutex);
    home_->open = false;
    for (GstBuffer* shell : home_->free_shells) {
        free_now(&shell->mini_object);
    }
    home_->free_shells.clear();
    for (Home::Slot& s : home_->slot) {
        if (s.memory != nullptr) {
            free_now(&std::exchange(s.memory, nullptr)->mini_object);
        }
    }
}

// Wraps a slot's payload area, the first time the slot carries a frame and
// again after the ring grew (new memory, larger slots) or the owner's idea
// of the slot's room changed.
void SlotBuffers::wrap_slot_st(std::uint16_t slot, const std::byte* data, std::size_t room) {
    Home::Slot& s = home_->slot[slot];
    if (s.data != nullptr && s.memory == nullptr) {
        // The transport hands out a slot only after its credit came back,
        // i.e. after the memory came home; anything else is a bug.
        throw std::logic_error("SlotBuffers: slot " + std::to_string(slot) +
                               " carries a new frame while downstream still holds its last one");
    }
    if (s.memory != nullptr) { // the ring moved or the room changed: retire the old wrapper
        free_now(&std::exchange(s.memory, nullptr)->mini_object);
    }
    // Writable: the sender writes a slot again only after its credit came
    // back, i.e. after this memory's last reference went, so an element
    // drawing in place (textoverlay) races nothing and need not copy the
    // frame first. (Shared memory, e.g. after a tee, is still copied by
    // GStreamer before a write, as for any buffer.)
    s.memory = gst_memory_new_wrapped(static_cast<GstMemoryFlags>(0), const_cast<std::byte*>(data), room, 0, 0, nullptr,
                                      nullptr);
    link(&s.memory->mini_object, Link{home_, slot}, memory_came_home);
    s.data = data;
    s.room = room;
    ++memories_made_;
}

GstBuffer* SlotBuffers::take_shell_st() {
    {
        std::lock_guard lock(home_->mutex);
        if (!home_->free_shells.empty()) {
            GstBuffer* shell = home_->free_shells.back();
            home_->free_shells.pop_back();
            return shell;
        }
        home_->free_shells.reserve(shells_made_ + 1); // room for every shell to come home
    }
    GstBuffer* shell = gst_buffer_new();
    link(&shell->mini_object, Link{home_}, shell_came_home);
    ++shells_made_;
    return shell;
}

GstBuffer* SlotBuffers::wrap_st(std::uint16_t slot, std::span<const std::byte> payload, std::size_t room) {
    const Home::Slot& s = home_->slot[slot];
    if (s.memory == nullptr || s.data != payload.data() || s.room != room) {
        wrap_slot_st(slot, payload.data(), room);
    }
    GstMemory* memory = std::exchange(home_->slot[slot].memory, nullptr); // downstream's until it comes home
    gst_memory_resize(memory, -static_cast<gssize>(memory->offset), payload.size());
    GstBuffer* shell = take_shell_st();
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
        std::lock_guard lock(home_->mutex);
        home_->freed.swap(draining_); // both have capacity = slots: no allocation either way
    }
    return draining_;
}

std::uint32_t SlotBuffers::lent_st() const noexcept {
    return static_cast<std::uint32_t>(wrapped_ - home_->returned.load(std::memory_order_relaxed));
}

std::uint64_t SlotBuffers::returned() const noexcept {
    return home_->returned.load(std::memory_order_relaxed);
}

} // namespace rdmastream::gst
