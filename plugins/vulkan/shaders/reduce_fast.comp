/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// f32 reductions as a tree, with subgroup arithmetic (reduce_fast_body.glsl).
#define GF_SG 1
#include "reduce_fast_body.glsl"
