/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_fuse.c — runs of f32 unary and binary launches of a captured graph as
 * one dispatch (shaders/ew_fused.comp).
 *
 * On lavapipe a dispatch costs 25-30 us whatever it computes (llvmpipe's
 * thread hand-off and the barrier in front of it): a captured graph replays
 * without graft's or the plugin's host work, but still pays that once per
 * launch. graph_create (vk_graph.c) asks vkp_fuse_step_of whether a node can
 * join a run and vkp_fuse_joins whether it can join the current one, and
 * records a run of two or more as one dispatch of ew_fused: each step's op
 * and bindings are specialisation constants of its pipeline (one pipeline
 * per distinct run, compiled at graph_create), its element offsets and a
 * unary op's scalars are params (rewritten when the core changes them).
 *
 * What a run computes is what the eager launches compute:
 *  - each step is gf_unary_f32 / gf_binary_f32 of op_math.glsl, the
 *    functions the eager shaders call, with the same scalars
 *    (vkp_ew_unary_f32_scalars);
 *  - every step writes its output, so every tensor ends as eagerly;
 *  - order: an invocation runs all steps on its element in the graph's order;
 *    pk_fuse.h's rule (written ranges equal to or disjoint from every other
 *    range of the run) makes that the eager order.
 * Bindings are the tensors' memory blocks (as every shader binds them), so a
 * run may touch any number of tensors in at most VKP_FUSE_SLOTS blocks. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define FUSE_GROUP 256u

bool vkp_fuse_enabled(void) {
    const char *v = secure_getenv("GRAFT_VULKAN_FUSE");
    return !v || strcmp(v, "0") != 0;
}

static const void *block_of(const gfp_tensor *t) { return ((const vkp_buf *)t->buffer)->block; }

static pk_range range_of(const vkp_fuse_step *s, int k) {
    uint64_t lo = s->offset[k];
    pk_range r = {s->block[k], lo, lo + (s->stride[k] ? (uint64_t)s->n : 1u)};
    return r;
}

bool vkp_fuse_step_of(const gfp_graph_node *node, vkp_fuse_step *s) {
    memset(s, 0, sizeof *s);
    pk_ew_kind kind = pk_ew_kind_of(node->op);
    if (kind != PK_EW_UNARY && kind != PK_EW_BINARY) return false;
    uint32_t n_in = kind == PK_EW_UNARY ? 1u : 2u;
    if (node->n_inputs != n_in || node->n_outputs != 1 || !node->inputs || !node->outputs)
        return false;
    const gfp_tensor *y = node->outputs[0];
    if (!y || !y->buffer || y->dtype != GFP_F32 || !pk_is_contiguous(y)) return false;
    int64_t n = pk_numel(y);
    if (n <= 0 || n > VKP_FUSE_MAX_ELEMENTS) return false;
    s->node = node;
    s->n_t = (int)n_in + 1;
    s->n = n;
    const gfp_tensor *t[3] = {y, node->inputs[0], n_in == 2 ? node->inputs[1] : NULL};
    for (int k = 0; k < s->n_t; k++) {
        if (!t[k] || !t[k]->buffer || t[k]->dtype != GFP_F32 || !vkp_same_shape(t[k], y))
            return false;
        if (pk_is_contiguous(t[k])) s->stride[k] = 1;
        else if (k > 0 && pk_fuse_broadcast_one(t[k])) s->stride[k] = 0;
        else return false;
        s->block[k] = block_of(t[k]);
        s->offset[k] = vkp_elem_offset(t[k]);
    }
    if (kind == PK_EW_UNARY &&
        vkp_ew_unary_f32_scalars(node->op, node->params, &s->pa, &s->pb, &s->flags) != GFP_OK)
        return false;
    for (int k = 0; k < s->n_t; k++) s->r[k] = range_of(s, k);
    /* The launch's own output against its inputs: the same rule as a run's. */
    return pk_fuse_ranges_join(s->r, 1, s->r + 1, s->n_t - 1);
}

/* The run's distinct blocks, at most VKP_FUSE_SLOTS; -1 when more. */
static int count_blocks(const vkp_fuse_step *steps, uint32_t count, const vkp_fuse_step *next,
                        const void **blocks) {
    int nb = 0;
    for (uint32_t i = 0; i <= count; i++) {
        const vkp_fuse_step *s = i < count ? &steps[i] : next;
        if (!s) break;
        for (int k = 0; k < s->n_t; k++) {
            int j = 0;
            while (j < nb && blocks[j] != s->block[k]) j++;
            if (j < nb) continue;
            if (nb == VKP_FUSE_SLOTS) return -1;
            blocks[nb++] = s->block[k];
        }
    }
    return nb;
}

bool vkp_fuse_joins(const vkp_fuse_step *steps, uint32_t count, const vkp_fuse_step *next) {
    if (count >= VKP_FUSE_MAX_STEPS || next->n != steps[0].n) return false;
    const void *blocks[VKP_FUSE_SLOTS];
    if (count_blocks(steps, count, next, blocks) < 0) return false;
    for (uint32_t i = 0; i < count; i++)
        if (!pk_fuse_ranges_join(next->r, next->n_t, steps[i].r, steps[i].n_t)) return false;
    return true;
}

/* The run's program (ew_fused.comp): a constant per step (op, bindings,
 * strides), the params (offsets, scalars), and the tensors to bind. */
static void program(const vkp_fuse_step *steps, uint32_t count, uint32_t *code, vkp_words *p,
                    const gfp_tensor **slot_t) {
    const void *blocks[VKP_FUSE_SLOTS];
    int nb = count_blocks(steps, count, NULL, blocks);
    for (int j = 0; j < VKP_FUSE_SLOTS; j++) slot_t[j] = NULL;
    p->n = 0;
    vkp_put(p, (uint32_t)steps[0].n);
    vkp_put(p, 0); /* ew_fused's opaque zero */
    for (uint32_t i = 0; i < count; i++) {
        const vkp_fuse_step *s = &steps[i];
        uint32_t slot[3] = {0, 0, 0};
        for (int k = 0; k < s->n_t; k++) {
            int j = 0;
            while (j < nb && blocks[j] != s->block[k]) j++;
            slot[k] = (uint32_t)j + 1; /* binding j + 1 */
            const gfp_tensor *t = k == 0 ? s->node->outputs[0] : s->node->inputs[k - 1];
            if (!slot_t[j]) slot_t[j] = t; /* any tensor of the block binds it */
        }
        bool binary = s->n_t == 3;
        code[i] = (s->node->op & 255u) | slot[0] << 8 | slot[1] << 12 |
                  (binary ? slot[2] : 1u) << 16 | (s->stride[1] ? 1u : 0u) << 20 |
                  (binary && s->stride[2] ? 1u : 0u) << 21 | (binary ? 1u : 0u) << 22;
        vkp_put(p, s->offset[0]);
        vkp_put(p, s->offset[1]);
        vkp_put(p, binary ? s->offset[2] : 0);
        vkp_put_f32(p, s->pa);
        vkp_put_f32(p, s->pb);
        vkp_put(p, s->flags);
    }
}

gfp_status vkp_fuse_dispatch(vkp_device *d, const vkp_fuse_step *steps, uint32_t count) {
    vkp_words p;
    uint32_t code[VKP_FUSE_MAX_STEPS] = {0};
    const gfp_tensor *slot_t[VKP_FUSE_SLOTS];
    if (count > VKP_FUSE_MAX_STEPS)
        return pk_fail(GFP_ERR_INTERNAL, "vulkan: a fused run of %u launches", (unsigned)count);
    program(steps, count, code, &p, slot_t);
    /* the smallest build that holds the run: 2, 4 or 8 steps */
    uint32_t part = count <= 2 ? 0 : count <= 4 ? 1 : 2;
    vkp_dispatch dp = {.shader = VKP_SH_EW_FUSED_P0 + part, .n_spec = 2 + VKP_FUSE_MAX_STEPS,
                       .params = p.w, .n_params = p.n, .n_tensors = VKP_FUSE_SLOTS};
    dp.spec[0] = FUSE_GROUP;
    /* vec4 loads and stores when every contiguous operand is 4-aligned */
    bool v4 = true;
    for (uint32_t i = 0; i < count; i++)
        for (int k = 0; k < steps[i].n_t; k++)
            if (steps[i].stride[k] && steps[i].offset[k] % 4u) v4 = false;
    dp.spec[1] = count | (v4 ? 256u : 0u);
    for (uint32_t i = 0; i < VKP_FUSE_MAX_STEPS; i++) dp.spec[2 + i] = code[i];
    for (int j = 0; j < VKP_FUSE_SLOTS; j++) dp.tensors[j] = slot_t[j];
    dp.groups[0] = vkp_groups(d, (uint64_t)steps[0].n, FUSE_GROUP * 8);
    return vkp_dispatch_run(d, &dp);
}
