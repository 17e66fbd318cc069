/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/dlpack.h — the DLPack structs graft's interop functions take.
 *
 * Includes <dlpack/dlpack.h> (install DLPack, e.g. libdlpack-dev). DLPack
 * 1.0 added DLManagedTensorVersioned; when the installed header is older
 * (0.x has no DLPACK_MAJOR_VERSION), this declares it and its flags with the
 * layout DLPack 1.0 specifies, so gf_to_dlpack_versioned and
 * gf_from_dlpack_versioned work with any DLPack header and with producers
 * and consumers built against DLPack 1.x. Include it before any other
 * header that declares these names. */
#ifndef GRAFT_DLPACK_H
#define GRAFT_DLPACK_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#include "graft/interop.h"

#if !defined(DLPACK_MAJOR_VERSION)
/* A DLPack version (the ABI of the structs: a major change breaks it). */
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* DLPack 1.0's managed tensor: the version comes first, so a consumer can
 * check it before reading anything else. */
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags; /* DLPACK_FLAG_BITMASK_* */
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The memory must not be written through this tensor. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
/* The producer copied the data for this export. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)
#define GRAFT_DLPACK_VERSIONED_DECLARED 1
#endif

/* The DLPack version graft writes into the tensors it exports. */
#if defined(DLPACK_MAJOR_VERSION)
#define GRAFT_DLPACK_MAJOR DLPACK_MAJOR_VERSION
#define GRAFT_DLPACK_MINOR DLPACK_MINOR_VERSION
#else
#define GRAFT_DLPACK_MAJOR 1
#define GRAFT_DLPACK_MINOR 0
#endif

#endif /* GRAFT_DLPACK_H */
