/* SPDX-License-Identifier: BSD-3-Clause */
/* graft_ops.h — lookups over graft_ops.def: an op's name, family, arity and
 * parameter struct by its number.
 *
 * Header only (static inline): the core, every plugin and the tools include
 * it, and a plugin still links nothing of graft. Installed beside
 * graft_plugin.h and graft_ops.def. */
#ifndef GRAFT_PLUGIN_OPS_H
#define GRAFT_PLUGIN_OPS_H

#include "graft_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What kind of op a row is (its family column); plugins route by it. */
typedef enum gfp_op_family {
    GFP_FAMILY_COPY = 0,
    GFP_FAMILY_CREATE,  /* fill, arange */
    GFP_FAMILY_RANDOM,
    GFP_FAMILY_TRI,
    GFP_FAMILY_UNARY,   /* unary elementwise */
    GFP_FAMILY_BINARY,  /* binary elementwise, comparisons, logical */
    GFP_FAMILY_WHERE,
    GFP_FAMILY_REDUCE,
    GFP_FAMILY_MATMUL,
    GFP_FAMILY_NORM,    /* softmax, layer and batch norm */
    GFP_FAMILY_INDEX,
    GFP_FAMILY_CONV,
    GFP_FAMILY_POOL,
    GFP_FAMILY_OPTIM,   /* optimiser updates (1.3) */
    GFP_FAMILY_FFT,     /* discrete Fourier transforms (1.3) */
    GFP_FAMILY_RNN,     /* recurrent cells' pointwise steps (1.3) */
    GFP_FAMILY_COUNT
} gfp_op_family;

#define GFP_FAMILY_BIT(f) (1u << (unsigned)(f))
/* Every family an elementwise kernel file serves. */
#define GFP_FAMILIES_ELEMENTWISE                                                             \
    (GFP_FAMILY_BIT(GFP_FAMILY_COPY) | GFP_FAMILY_BIT(GFP_FAMILY_CREATE) |                   \
     GFP_FAMILY_BIT(GFP_FAMILY_TRI) | GFP_FAMILY_BIT(GFP_FAMILY_UNARY) |                     \
     GFP_FAMILY_BIT(GFP_FAMILY_BINARY) | GFP_FAMILY_BIT(GFP_FAMILY_WHERE))

/* Which parameter struct an op takes (its params column). */
typedef enum gfp_params_kind {
    GFP_PARAMS_none = 0,
    GFP_PARAMS_scalar,
    GFP_PARAMS_fill,
    GFP_PARAMS_arange,
    GFP_PARAMS_clamp,
    GFP_PARAMS_tri,
    GFP_PARAMS_reduce,
    GFP_PARAMS_dim,
    GFP_PARAMS_layer_norm,
    GFP_PARAMS_batch_norm,
    GFP_PARAMS_conv2d,
    GFP_PARAMS_pool2d,
    GFP_PARAMS_random,
    GFP_PARAMS_adam,
    GFP_PARAMS_fft,
    GFP_PARAMS_COUNT
} gfp_params_kind;

typedef struct gfp_op_info {
    uint32_t op;          /* gfp_op */
    const char *name;     /* "add" */
    const char *id;       /* "ADD": the enum member's suffix */
    uint8_t family;       /* gfp_op_family */
    uint8_t in_min, in_max;
    uint8_t in_optional;  /* how many of the last inputs may be NULL */
    uint8_t n_out;
    uint8_t params;       /* gfp_params_kind */
} gfp_op_info;

/* Index of each row in the table below. */
enum gfp_op_row_index_ {
#define GFP_OP_ROW(ID, number, name, family, in_min, in_max, in_optional, n_out, params) \
    GFP_OP_ROW_INDEX_##ID,
#include "graft_ops.def"
    GFP_OP_ROW_COUNT
};

/* Every row, in the table's order. */
static const gfp_op_info gfp_op_table[GFP_OP_ROW_COUNT] = {
#define GFP_OP_ROW(ID, number, name, family, in_min, in_max, in_optional, n_out, params) \
    {number, #name, #ID, GFP_FAMILY_##family, in_min, in_max, in_optional, n_out,       \
     GFP_PARAMS_##params},
#include "graft_ops.def"
};

/* The row of op, or NULL for a number the table does not hold. */
static inline const gfp_op_info *gfp_op_lookup(uint32_t op) {
    switch (op) {
#define GFP_OP_ROW(ID, number, name, family, in_min, in_max, in_optional, n_out, params) \
    case number: return &gfp_op_table[GFP_OP_ROW_INDEX_##ID];
#include "graft_ops.def"
    default: return (const gfp_op_info *)0;
    }
}

/* The op's name, or NULL when the table does not hold it. */
static inline const char *gfp_op_name(uint32_t op) {
    const gfp_op_info *i = gfp_op_lookup(op);
    return i ? i->name : (const char *)0;
}

/* The op's family, or GFP_FAMILY_COUNT when the table does not hold it. */
static inline gfp_op_family gfp_op_family_of(uint32_t op) {
    const gfp_op_info *i = gfp_op_lookup(op);
    return i ? (gfp_op_family)i->family : GFP_FAMILY_COUNT;
}

/* The op whose name is `name`, or 0 (no op has number 0). */
static inline uint32_t gfp_op_by_name(const char *name) {
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++) {
        const char *a = gfp_op_table[i].name, *b = name;
        while (*a && *a == *b) a++, b++;
        if (*a == *b) return gfp_op_table[i].op;
    }
    return 0;
}

/* The first size of a parameter struct (v1.0, or the minor that added it):
 * what a launch's params must cover. */
static inline size_t gfp_params_min_size(gfp_params_kind k) {
    switch (k) {
    case GFP_PARAMS_scalar: return GFP_SCALAR_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_fill: return GFP_FILL_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_arange: return GFP_ARANGE_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_clamp: return GFP_CLAMP_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_tri: return GFP_TRI_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_reduce: return GFP_REDUCE_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_dim: return GFP_DIM_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_layer_norm: return GFP_LAYER_NORM_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_batch_norm: return GFP_BATCH_NORM_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_conv2d: return GFP_CONV2D_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_pool2d: return GFP_POOL2D_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_random: return GFP_RANDOM_PARAMS_SIZE_V1_0;
    case GFP_PARAMS_adam: return GFP_ADAM_PARAMS_SIZE_V1_3; /* its first version */
    case GFP_PARAMS_fft: return GFP_FFT_PARAMS_SIZE_V1_3;
    default: return 0;
    }
}

/* The parameter struct's name, "gfp_scalar_params" ("" for none). */
static inline const char *gfp_params_name(gfp_params_kind k) {
    static const char *const names[GFP_PARAMS_COUNT] = {
        "", "gfp_scalar_params", "gfp_fill_params", "gfp_arange_params",
        "gfp_clamp_params", "gfp_tri_params", "gfp_reduce_params", "gfp_dim_params",
        "gfp_layer_norm_params", "gfp_batch_norm_params", "gfp_conv2d_params",
        "gfp_pool2d_params", "gfp_random_params", "gfp_adam_params", "gfp_fft_params"};
    return (unsigned)k < GFP_PARAMS_COUNT ? names[k] : "";
}

#ifdef __cplusplus
}
#endif
#endif /* GRAFT_PLUGIN_OPS_H */
