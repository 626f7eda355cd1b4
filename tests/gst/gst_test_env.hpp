// SPDX-License-Identifier: LGPL-2.1-or-later
// Every native test starts GStreamer the same way: our plugin from the build
// tree, the few system plugins the tests use (a short scan: scanning every
// plugin of the system takes 40 s with ASan), a registry of its own (not the
// user's cache).
#pragma once

#include <gst/gst.h>

inline void init_gstreamer_for_tests() {
    g_setenv("GST_PLUGIN_SYSTEM_PATH_1_0", TEST_SYSTEM_PLUGINS, TRUE);
    g_setenv("GST_PLUGIN_PATH_1_0", RDMA_PLUGIN_DIR, TRUE);
    g_setenv("GST_REGISTRY_1_0", TEST_REGISTRY, TRUE);
    gst_init(nullptr, nullptr);
}
