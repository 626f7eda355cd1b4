// SPDX-License-Identifier: LGPL-2.1-or-later
// The "rdma" plugin: rdmasink, rdmasrc and rdmasrcbin, one registration each.
#include "rdmasink.hpp"
#include "rdmasrc.hpp"
#include "rdmasrcbin.hpp"

#include "rdmastream/fork_safety.hpp"

#include <exception>

GST_DEBUG_CATEGORY_STATIC(rdma_plugin_debug);

static gboolean plugin_init(GstPlugin* plugin) {
    GST_DEBUG_CATEGORY_INIT(rdma_plugin_debug, "rdma", 0, "the rdma plugin");
    // GStreamer forks (its plugin scanner; an application may too), so the
    // elements' registrations are made fork-safe, before the first one
    // (docs/tuning.md#fork-safety). An application that registered memory
    // before loading the plugin made its own choice: said, and kept.
    try {
        rdmastream::enable_fork_safety();
    } catch (const std::exception& e) {
        GST_CAT_WARNING(rdma_plugin_debug, "registrations stay as the application made them: %s", e.what());
    }
    gboolean ok = FALSE;
    ok |= GST_ELEMENT_REGISTER(rdmasink, plugin);
    ok |= GST_ELEMENT_REGISTER(rdmasrc, plugin);
    ok |= GST_ELEMENT_REGISTER(rdmasrcbin, plugin); // what rdma:// URIs make (rdmasrcbin.hpp)
    return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, rdma,
                  "Live video frames between machines over RDMA, zero-copy both ways", plugin_init, VERSION, "LGPL",
                  GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
