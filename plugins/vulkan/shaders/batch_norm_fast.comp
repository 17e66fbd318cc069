/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 9
// f32 batch_norm, with subgroup arithmetic (batch_norm_fast_body.glsl).
#define GF_SG 1
#include "batch_norm_fast_body.glsl"
