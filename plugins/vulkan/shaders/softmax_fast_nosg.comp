/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// f32 softmax / log_softmax, without subgroup operations (softmax_fast_body.glsl).
#define GF_SG 0
#include "softmax_fast_body.glsl"
