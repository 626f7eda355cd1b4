// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastatsticker.hpp"

#include <fmt/format.h>

#include <memory>
#include <mutex>

namespace rdmastream::gst {

// What the clock entry carries; freed with the entry's last reference.
struct StatsTicker::Tick {
    Tick(GstElement* e, StatsSnapshot s) : element(GST_ELEMENT(gst_object_ref(e))), snapshot(s) {}
    GstElement* element; // a reference
    StatsSnapshot snapshot;
    std::mutex mutex; // taken once per tick and by stop(), never per frame
    bool stopped = false;
};

namespace {

gboolean on_tick(GstClock*, GstClockTime, GstClockID, gpointer data) {
    auto* t = static_cast<StatsTicker::Tick*>(data);
    std::lock_guard lock(t->mutex);
    if (!t->stopped) {
        gst_element_post_message(t->element, gst_message_new_element(GST_OBJECT(t->element), t->snapshot(t->element)));
    }
    return TRUE;
}

void free_tick(gpointer data) {
    const std::unique_ptr<StatsTicker::Tick> t(static_cast<StatsTicker::Tick*>(data));
    gst_object_unref(t->element);
}

} // namespace

void add_path_fields(GstStructure* s, const std::vector<PathReport>& paths) {
    static constexpr struct {
        const char* name;
        std::uint64_t PathReport::*field;
    } kCounters[] = {
        {"frames-first", &PathReport::frames_first}, {"frames-only", &PathReport::frames_only},
        {"frames-lost", &PathReport::frames_lost},   {"copies-differ", &PathReport::copies_differ},
        {"downs", &PathReport::downs},               {"ups", &PathReport::ups},
    };
    for (const PathReport& p : paths) {
        const char letter = static_cast<char>(g_ascii_tolower(p.name));
        const auto field = [letter](const char* name) { return fmt::format("path-{}-{}", letter, name); };
        gst_structure_set(s, field("peer").c_str(), G_TYPE_STRING, p.peer.c_str(), field("device").c_str(),
                          G_TYPE_STRING, p.device.c_str(), field("up").c_str(), G_TYPE_BOOLEAN, gboolean{p.up},
                          nullptr);
        for (const auto& c : kCounters) {
            gst_structure_set(s, field(c.name).c_str(), G_TYPE_UINT64, guint64{p.*c.field}, nullptr);
        }
    }
}

void StatsTicker::start(GstElement* element, std::chrono::milliseconds interval, StatsSnapshot snapshot) {
    stop();
    if (interval.count() <= 0) {
        return;
    }
    clock_ = gst_system_clock_obtain();
    const GstClockTime period = static_cast<GstClockTime>(interval.count()) * GST_MSECOND;
    id_ = gst_clock_new_periodic_id(clock_, gst_clock_get_time(clock_) + period, period);
    tick_ = std::make_unique<Tick>(element, snapshot).release();
    // The entry owns the tick from here (free_tick, with its last reference).
    if (gst_clock_id_wait_async(id_, on_tick, tick_, free_tick) != GST_CLOCK_OK) {
        GST_WARNING_OBJECT(element, "could not schedule the stats messages");
    }
}

void StatsTicker::stop() {
    if (id_ == nullptr) {
        return;
    }
    {
        // A tick running now finishes first; none posts after this.
        std::lock_guard lock(tick_->mutex);
        tick_->stopped = true;
    }
    gst_clock_id_unschedule(id_);
    gst_clock_id_unref(id_); // may free the tick (and its element reference)
    id_ = nullptr;
    tick_ = nullptr;
    gst_object_unref(clock_);
    clock_ = nullptr;
}

} // namespace rdmastream::gst
