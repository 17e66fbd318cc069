/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 7
// f32 layer_norm, without subgroup operations (layer_norm_fast_body.glsl).
#define GF_SG 0
#include "layer_norm_fast_body.glsl"
