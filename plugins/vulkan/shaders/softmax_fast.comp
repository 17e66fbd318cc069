/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// f32 softmax / log_softmax, with subgroup arithmetic (softmax_fast_body.glsl).
#define GF_SG 1
#include "softmax_fast_body.glsl"
