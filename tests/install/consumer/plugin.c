/* plugin.c — the smallest third-party plugin source, built through the
 * graft::abi target: it includes the installed ABI header and links nothing
 * of graft. It declines every ABI so it can never be mistaken for a device. */
#include "graft_plugin.h"

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table) {
    (void)request;
    *table = 0;
    return GFP_ERR_VERSION;
}
