/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/graph.h — capture a region of work once, replay it without dispatch.
 *
 * Between gf_graph_capture_begin(dev) and gf_graph_capture_end() the calling
 * thread runs ops eagerly as always (the region's first run produces its
 * results), and every kernel launch, fill and copy they make is recorded with
 * its prepared descriptors and parameters. gf_graph_replay runs the recorded
 * launches again, in order, on the same memory: no allocation, no autograd
 * bookkeeping, no reference counting, no capability query per op.
 *
 * The rules (those of CUDA graphs, and why):
 *  - Inputs are the tensors the region reads that were made outside it. The
 *    graph keeps them alive and reads them where they were at capture: write
 *    new values into them in place (gf_copy_) before each replay. Replaying
 *    after the caller released an input, or after an input changed its
 *    storage, sizes or strides (gf_module_to...), is refused (INVALID): the
 *    launches were prepared for the old geometry.
 *  - Outputs are the tensors the region made and the caller still holds
 *    (losses, gradients, optimiser state): their memory comes from a
 *    graph-private pool with fixed addresses and holds new values after each
 *    replay. The pool is released with the graph (when the last output made
 *    in it is released, if that comes later).
 *  - Host decisions are frozen: which branch an op took, which parameters
 *    had a gradient. What changes from step to step is refreshed on replay:
 *    Philox offsets (random ops draw new numbers each replay, exactly as the
 *    eager steps would), optimiser step counts and learning rates (SGD, Adam
 *    with the device's fused update), learning-rate schedules stepped inside.
 *  - Refused inside a region, with an error naming the call, which also
 *    ends the capture (gf_graph_capture_end then fails with the same reason)
 *    and leaves graft usable: reading a tensor to the host (the value would be
 *    stale on replay), work on a second device (other than the fallback
 *    device running an op the first lacks), a nested capture or a replay,
 *    optimisers other than SGD and Adam, SGD with momentum before its first
 *    step, gf_lr_plateau_step (it reads a metric).
 *  - Warm up first: run one step eagerly before capturing, so gradients
 *    and optimiser state exist (a first step takes other paths), and clear
 *    gradients inside the region with gf_optimizer_zero_grad_keep.
 *  - The graph holds the optimisers and schedules stepped inside the region
 *    (replay updates their step counts and learning rates): destroying one
 *    while the graph lives only drops the caller's hold, and replays go on
 *    stepping it until the graph is destroyed.
 *  - The graph's hold on an input is graft's own: releasing a reference the
 *    caller does not own (one a scope recorded) is refused while the graph
 *    holds the tensor, as it is for a .grad.
 *
 * Several threads may capture and replay at once, each its own graph; one
 * graph replays on one thread at a time (others wait). Destroy a graph only
 * when no thread replays it.
 *
 * A plugin may take a captured run of launches as a whole (the ABI's
 * optional graph slots: cpu_onednn runs a flat list of prepared kernels,
 * vulkan resubmits command buffers recorded once, opencl enqueues kernels
 * whose arguments were set once); elsewhere the core replays launch by
 * launch. */
#ifndef GRAFT_GRAPH_H
#define GRAFT_GRAPH_H

#include "graft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_graph gf_graph;

/* Starts recording the calling thread's work on dev (NULL: the default
 * device). Fails: INVALID when this thread is already capturing (nested
 * capture), DEVICE when dev cannot be opened. */
GF_API gf_status gf_graph_capture_begin(gf_device *dev);
/* Ends the calling thread's capture. Returns the graph (destroy it with
 * gf_graph_destroy), or NULL with the error when no capture was open or the
 * region did something that cannot be replayed (the first such call's
 * message). */
GF_API gf_graph *gf_graph_capture_end(void);
/* Whether the calling thread is capturing. */
GF_API bool gf_graph_capturing(void);
/* Runs the recorded work again. Fails: INVALID (an input released or
 * reshaped since capture; the graph is NULL), PLUGIN (a launch failed: what
 * ran before it stays written). */
GF_API gf_status gf_graph_replay(gf_graph *g);
/* How many launches, fills, copies and host steps the graph replays. */
GF_API size_t gf_graph_node_count(const gf_graph *g);
/* How many inputs: storages made outside the region that it reads or
 * writes (the tensors it was given, parameters, gradients, optimiser
 * state). */
GF_API size_t gf_graph_input_count(const gf_graph *g);
/* Bytes of the graph's private pool. */
GF_API uint64_t gf_graph_pool_bytes(const gf_graph *g);
/* Releases the graph, its hold on the inputs and its pool (blocks that
 * outputs still hold go when those are released). NULL is ignored. */
GF_API void gf_graph_destroy(gf_graph *g);

#ifdef __cplusplus
}
#endif
#endif
