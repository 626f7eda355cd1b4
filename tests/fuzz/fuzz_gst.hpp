// SPDX-License-Identifier: LGPL-2.1-or-later
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
#include <string>
#include <string_view>

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

// Whether every quote ("...", with backslash escapes) and bracket ((), [],
// {}, <>) in `s` is closed. GStreamer 1.22's gst_caps_from_string leaks
// some 200 bytes per unclosed level on every parse of such caps (reported,
// not ours to fix; a peer's format announcement costs at most that once): a
// fuzzer feeding it those runs out of memory within seconds, so the targets
// that parse caps with GStreamer skip them.
inline bool balanced(std::string_view s) {
    std::string open; // closers still expected, innermost last
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (!open.empty() && open.back() == '"') {
            if (c == '\\') ++i;
            else if (c == '"') open.pop_back();
            continue;
        }
        switch (c) {
        case '"': open.push_back('"'); break;
        case '(': open.push_back(')'); break;
        case '[': open.push_back(']'); break;
        case '{': open.push_back('}'); break;
        case '<': open.push_back('>'); break;
        case ')':
        case ']':
        case '}':
        case '>':
            if (open.empty() || open.back() != c) return false;
            open.pop_back();
            break;
        default: break;
        }
    }
    return open.empty();
}

inline void init_gstreamer() {
    g_setenv("GST_REGISTRY_DISABLE", "yes", TRUE);
    g_log_set_default_handler(on_glib_log, nullptr);
    gst_init(nullptr, nullptr);
}

} // namespace rdmastream::fuzz
