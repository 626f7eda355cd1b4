// The "rdma" plugin: rdmasink and rdmasrc, one registration each.
#include "rdmasink.hpp"
#include "rdmasrc.hpp"

static gboolean plugin_init(GstPlugin* plugin) {
    gboolean ok = FALSE;
    ok |= GST_ELEMENT_REGISTER(rdmasink, plugin);
    ok |= GST_ELEMENT_REGISTER(rdmasrc, plugin);
    return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, rdma,
                  "Live video frames between machines over RDMA, zero-copy both ways", plugin_init, VERSION, "LGPL",
                  GST_PACKAGE_NAME, GST_PACKAGE_ORIGIN)
