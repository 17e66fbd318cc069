/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_conv.h — what the two convolution files share: the geometry of one
 * CONV2D (or gradient) launch, checked by ocl_conv.c, and the GEMM form of
 * ocl_conv_gemm.c. */
#ifndef GRAFT_OCL_CONV_H
#define GRAFT_OCL_CONV_H

#include "ocl_internal.h"

/* The geometry, checked by pk_check_conv2d (plugin_kit.h). */
typedef pk_conv2d_geom conv_geom;

/* The op as a GEMM (im2col, matmul, col2im) in tiles that fit the device's
 * allocation limit. x, w and y are the input-, weight- and output-shaped
 * tensors whatever the op (as in ocl_conv.c); bias only for CONV2D. Sets
 * *taken to false, and does nothing, when the direct kernel should run
 * instead (asked for, faster for this shape, or no tile fits). */
gfp_status ocl_conv_gemm(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                         const gfp_tensor *y, const gfp_tensor *bias, const conv_geom *g,
                         bool *taken);

#endif
