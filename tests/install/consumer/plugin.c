/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin.c — the smallest third-party plugin source, built through the
 * graft::abi target: it includes the installed ABI header and links nothing
 * of graft. It declines every ABI so it can never be mistaken for a device.
 * It names its op through the installed table (graft_ops.h, graft_ops.def). */
#include "graft_ops.h"

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **table) {
    (void)request;
    *table = 0;
    if (!gfp_op_name(GFP_OP_ADD)) return GFP_ERR_INTERNAL; /* the table is installed */
    return GFP_ERR_VERSION;
}
