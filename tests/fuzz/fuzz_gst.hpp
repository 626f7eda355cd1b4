// GStreamer for the fuzz targets that need it: initialised once, without a
// plugin registry (caps and video info need no plugins, and a scan would
// load every system plugin into the fuzzer).
//
// GLib criticals (a g_return_if_fail tripped) are findings while a
// CriticalsAreFindings is alive: around the calls whose arguments are ours.
// Elsewhere, e.g. inside gst_caps_from_string on a peer's garbage, they are
// GStreamer's own complaint about its input: the first is printed.
#pragma once

#include <gst/gst.h>

#include <cstdio>
#include <cstdlib>

namespace rdmastream::fuzz {

inline bool g_criticals_are_findings = false;

class CriticalsAreFindings {
public:
    CriticalsAreFindings() noexcept { g_criticals_are_findings = true; }
    ~CriticalsAreFindings() { g_criticals_are_findings = false; }
    CriticalsAreFindings(const CriticalsAreFindings&) = delete;
    CriticalsAreFindings& operator=(const CriticalsAreFindings&) = delete;
};

inline void on_glib_log(const gchar* domain, GLogLevelFlags level, const gchar* message, gpointer) {
    const bool critical = (level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR)) != 0;
    if (critical && g_criticals_are_findings) {
        std::fprintf(stderr, "fuzz: GLib critical from code under test: %s: %s\n", domain ? domain : "", message);
        std::abort(); // libFuzzer saves the input (a SIGTRAP from G_BREAKPOINT it would not)
    }
    static bool told = false;
    if (critical && !told) {
        told = true;
        std::fprintf(stderr, "fuzz: GLib critical outside the code under test, not a finding (shown once): %s: %s\n",
                     domain ? domain : "", message);
    }
}

inline void init_gstreamer() {
    g_setenv("GST_REGISTRY_DISABLE", "yes", TRUE);
    g_log_set_default_handler(on_glib_log, nullptr);
    gst_init(nullptr, nullptr);
}

} // namespace rdmastream::fuzz
