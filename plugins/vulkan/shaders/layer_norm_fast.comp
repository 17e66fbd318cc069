/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 7
// f32 layer_norm, with subgroup arithmetic (layer_norm_fast_body.glsl).
#define GF_SG 1
#include "layer_norm_fast_body.glsl"
