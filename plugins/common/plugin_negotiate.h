/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_negotiate.h — the negotiation every graft plugin in this tree does
 * (plugins include it; it needs nothing but the ABI header).
 *
 * Checks the request the way the ABI asks (a complete request and host
 * table, the same major), refuses another major with a message saying what
 * to do, and otherwise hands out the plugin's table. No side effects beyond
 * remembering the host: negotiation must not start drivers. */
#ifndef GRAFT_PLUGIN_NEGOTIATE_H
#define GRAFT_PLUGIN_NEGOTIATE_H

#include <stdio.h>

#include "graft_plugin.h"

/* *host_out receives the host table on success (the plugin keeps it until
 * its shutdown returns). */
static inline gfp_status gfp_plugin_negotiate_common(const gfp_negotiate_request *request,
                                                     const gfp_plugin **table,
                                                     const gfp_plugin *mine,
                                                     const gfp_host **host_out) {
    if (table) *table = NULL;
    /* Without a complete request there is no host to report through. */
    if (!request || !table || request->struct_size < GFP_NEGOTIATE_REQUEST_SIZE_V1_0)
        return GFP_ERR_INVALID;
    const gfp_host *host = request->host;
    if (!host || host->struct_size < GFP_HOST_SIZE_V1_0 || !host->set_error || !host->log)
        return GFP_ERR_INVALID;
    if (request->abi_major != GFP_ABI_MAJOR) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the %s plugin implements plugin ABI %d.%d; the core offers %u.%u (a different "
                 "major): use a build of the %s plugin made for that core",
                 mine->name, GFP_ABI_MAJOR, GFP_ABI_MINOR, (unsigned)request->abi_major,
                 (unsigned)request->abi_minor, mine->name);
        host->set_error(host->host_ctx, msg);
        return GFP_ERR_VERSION;
    }
    *host_out = host;
    *table = mine;
    return GFP_OK;
}

#endif
