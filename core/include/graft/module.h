/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/module.h — modules: torch.nn.Module for C.
 *
 * A module is a tree of named children, parameters and buffers, named as
 * PyTorch names them ("layer1.0.conv1.weight", "bn1.running_mean"), with a
 * state dict that a PyTorch model's state_dict() (saved with
 * safetensors.torch.save_file) loads into by those names.
 *
 * A module of your own is a struct whose FIRST member is a gf_module, a
 * class (its name, forward and destroy), and registration calls:
 *
 *   typedef struct mlp { gf_module base; gf_module *fc1, *fc2; } mlp;
 *   static gf_tensor *mlp_forward(gf_module *m, gf_tensor *const *in, int n) {
 *       mlp *self = (mlp *)m;
 *       gf_tensor *h = gf_module_forward(self->fc1, in, n);
 *       gf_tensor *r = h ? gf_relu(h) : NULL;
 *       gf_tensor *y = r ? gf_module_forward(self->fc2, &r, 1) : NULL;
 *       gf_tensor_release(h), gf_tensor_release(r);
 *       return y;
 *   }
 *   static const gf_module_class mlp_class = {"MLP", mlp_forward, NULL};
 *   mlp *m = calloc(1, sizeof *m);
 *   gf_module_init(&m->base, &mlp_class);         // destroy NULL: free(m)
 *   m->fc1 = gf_nn_linear(784, 128, true, GF_F32, NULL);
 *   gf_module_register_module(&m->base, "fc1", m->fc1);  // the parent retains
 *   gf_module_release(m->fc1);                          // ... so this is ours
 *
 * Children are reference counted (a child may sit in two parents); the
 * tensors registered are retained. Every function that fails records an
 * error (gf_last_error) and returns a failing status or NULL; NULL module
 * arguments fail INVALID. Modules are not thread-safe: one thread changes a
 * module at a time (forward may run on several). */
#ifndef GRAFT_MODULE_H
#define GRAFT_MODULE_H

#include "graft/types.h"
#include "graft/tensor.h"
#include "graft/interop.h"
#include "graft/nn.h"
#include "graft/layers.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_module gf_module;

typedef struct gf_module_class {
    const char *name; /* the type's name, "Linear" */
    /* n inputs; returns a new reference, or NULL with an error recorded.
     * NULL: the module has no forward of its own (a container). */
    gf_tensor *(*forward)(gf_module *self, gf_tensor *const *inputs, int n);
    /* Frees the struct that embeds the module (and whatever it owns beyond
     * what was registered) once the last reference goes; registered items
     * are released by graft before. NULL: free(self). */
    void (*destroy)(gf_module *self);
} gf_module_class;

/* Embed as the first member of your module's struct. */
struct gf_module {
    const gf_module_class *cls;
    struct gf_module_state *state; /* graft's */
};

/* Makes m a module of class cls with one reference (the caller's),
 * training mode on. Fails: INVALID (NULL), OUT_OF_MEMORY. */
GF_API gf_status gf_module_init(gf_module *m, const gf_module_class *cls);
/* A module with no forward, to assemble a tree (nn.Module()). */
GF_API gf_module *gf_module_new(const char *type_name);
GF_API gf_module *gf_module_retain(gf_module *m); /* returns m */
/* NULL is harmless. The last release releases children and tensors, then
 * calls the class's destroy. */
GF_API void gf_module_release(gf_module *m);
GF_API const char *gf_module_type_name(const gf_module *m); /* "?" for NULL */

/* Registration. Names are non-empty, without '.', unique within the module
 * across parameters, buffers and children; a name registered again with the
 * same kind replaces the old value (PyTorch's setattr). A parameter is a
 * floating-point leaf; it is made to require grad (nn.Parameter). p NULL
 * registers an absent parameter (bias=False): listed nowhere, but the name
 * is taken. A buffer is any tensor (NULL too); a persistent buffer is part
 * of the state dict. Fails: INVALID (NULL module, bad or taken name, a
 * parameter that is not a float leaf, a child that would make a cycle),
 * OUT_OF_MEMORY. */
GF_API gf_status gf_module_register_parameter(gf_module *m, const char *name, gf_tensor *p);
GF_API gf_status gf_module_register_buffer(gf_module *m, const char *name, gf_tensor *t,
                                           bool persistent);
GF_API gf_status gf_module_register_module(gf_module *m, const char *name, gf_module *child);

/* Lookups by dotted path ("layer1.0.conv1.weight"), BORROWED. NULL with
 * NOT_FOUND (an absent parameter reads as NULL with no error). */
GF_API gf_tensor *gf_module_get_parameter(const gf_module *m, const char *path);
GF_API gf_tensor *gf_module_get_buffer(const gf_module *m, const char *path);
GF_API gf_module *gf_module_get_submodule(const gf_module *m, const char *path);

/* Every parameter of the tree once (tied ones once), in PyTorch's order
 * (the module's own, then each child's, depth first). With out NULL, the
 * count; otherwise writes up to max BORROWED pointers (for
 * gf_adam_create and friends) and returns the count. -1 on failure. */
GF_API int gf_module_parameters(const gf_module *m, gf_tensor **out, int max);
/* Name -> tensor dicts (new; destroy them): named_parameters (tied ones
 * once, under their first name), named_buffers (persistent or not), and
 * the direct children's names are gf_module_child_name. */
GF_API gf_tensor_dict *gf_module_named_parameters(const gf_module *m);
GF_API gf_tensor_dict *gf_module_named_buffers(const gf_module *m);
GF_API int gf_module_child_count(const gf_module *m);
GF_API const char *gf_module_child_name(const gf_module *m, int i);   /* BORROWED */
GF_API gf_module *gf_module_child_at(const gf_module *m, int i);      /* BORROWED */

/* state_dict(): every parameter and persistent buffer under its full name
 * (tied ones under each name, as PyTorch), in PyTorch's order; the tensors
 * share storage with the module's, without history (detached). New dict. */
GF_API gf_tensor_dict *gf_module_state_dict(const gf_module *m);

/* What load_state_dict found: the module's keys the dict lacks, and the
 * dict's keys the module does not have. Free with gf_load_report_clear. */
typedef struct gf_load_report {
    int n_missing, n_unexpected;
    char **missing, **unexpected;
} gf_load_report;
GF_API void gf_load_report_clear(gf_load_report *r);
/* load_state_dict(d, strict): copies each entry into the parameter or
 * buffer of its name (values converted to its dtype and device, under
 * no-grad; the tensors keep their identity, so optimisers holding them see
 * the values). Every entry is checked before anything is written: a size
 * mismatch fails SHAPE naming the key; with strict, a missing or unexpected
 * key fails INVALID listing them, and nothing changes. report may be NULL.
 * Fails: INVALID, SHAPE, and the copies' errors. */
GF_API gf_status gf_module_load_state_dict(gf_module *m, const gf_tensor_dict *d, bool strict,
                                           gf_load_report *report);

/* train(mode) / eval(): the flag of m and every descendant. */
GF_API gf_status gf_module_train(gf_module *m, bool mode);
GF_API bool gf_module_is_training(const gf_module *m); /* false for NULL */
/* zero_grad(set_to_none=True) over every parameter. */
GF_API gf_status gf_module_zero_grad(gf_module *m);
/* requires_grad_(flag) on every parameter of the tree (freezing). */
GF_API gf_status gf_module_requires_grad_(gf_module *m, bool requires_grad);

/* module.to(device, dtype): moves and/or casts every parameter and buffer
 * of the tree (and each parameter's .grad) in place. device is a string as
 * gf_device_find takes ("cpu:1", "cuda:0,cpu"), NULL = keep each tensor's;
 * dtype a floating-point or complex dtype, or GF_MODULE_KEEP_DTYPE. As
 * PyTorch: only floating-point and complex tensors are cast
 * (num_batches_tracked stays i64); a complex tensor to a real dtype fails
 * (graft keeps imaginary parts: take gf_real yourself), the
 * tensors keep their identity (t.data = converted: a pointer from
 * gf_module_get_parameter or an optimiser stays valid and sees the move),
 * requires_grad and hooks are kept. Every tensor is converted before any
 * changes, so on failure the module is unchanged. Create optimisers after
 * moving (their state does not move), and do not run backward through a
 * graph built before the move (its gradients have the old dtype and
 * device). Fails: INVALID (NULL), DTYPE (a dtype that is neither
 * floating-point nor complex; a complex tensor to a real dtype), NOT_FOUND / INVALID (the device, as gf_device_find),
 * and the conversions' errors (OUT_OF_MEMORY, DTYPE when the device does
 * not store the dtype). */
#define GF_MODULE_KEEP_DTYPE ((gf_dtype)-1)
GF_API gf_status gf_module_to(gf_module *m, const char *device, gf_dtype dtype);

/* Runs the forward pre-hooks, the class's forward, then the forward hooks.
 * A pre-hook may replace the inputs: it returns GF_OK and may write new
 * references into in[] (the old ones are then its to release: they are
 * borrowed from the caller or from an earlier hook's output). A hook may
 * replace the output (*out, a new reference; release the old one). A
 * failing hook stops the call with its status. Fails: INVALID (NULL, a
 * module without forward), and the forward's errors. */
typedef gf_status (*gf_module_pre_hook)(gf_module *m, gf_tensor **in, int n, void *user);
typedef gf_status (*gf_module_hook)(gf_module *m, gf_tensor *const *in, int n, gf_tensor **out,
                                    void *user);
GF_API gf_tensor *gf_module_forward(gf_module *m, gf_tensor *const *inputs, int n);
/* Return a handle > 0 (0 on failure) for gf_module_remove_hook. */
GF_API int gf_module_register_forward_pre_hook(gf_module *m, gf_module_pre_hook fn, void *user);
GF_API int gf_module_register_forward_hook(gf_module *m, gf_module_hook fn, void *user);
GF_API gf_status gf_module_remove_hook(gf_module *m, int handle);

/* ---- layers as modules (PyTorch's names, defaults and initialisation) */
/* nn.Linear: weight [out, in] (kaiming_uniform a = sqrt(5)), bias [out]
 * (uniform +-1/sqrt(in)); dev NULL = the default device. */
GF_API gf_module *gf_nn_linear(int64_t in_features, int64_t out_features, bool bias,
                               gf_dtype dtype, gf_device *dev);
/* nn.Sequential: children "0", "1", ... run in order (each retained). */
GF_API gf_module *gf_nn_sequential(gf_module *const *modules, int n);
/* nn.Conv2d: weight [out, in / groups, kh, kw] (kaiming_uniform a =
 * sqrt(5)), bias [out] (uniform +-1/sqrt(fan_in)); opts NULL = stride 1,
 * no padding, dilation 1, one group (graft/nn.h). */
GF_API gf_module *gf_nn_conv2d(int64_t in_channels, int64_t out_channels, const int kernel[2],
                               const gf_conv2d_opts *opts, bool bias, gf_dtype dtype,
                               gf_device *dev);
/* nn.BatchNorm1d / 2d (the input's rank decides: [N, C] or [N, C, ...]):
 * weight ones, bias zeros (affine), buffers running_mean zeros,
 * running_var ones and num_batches_tracked (i64, 0) when
 * track_running_stats. Training normalises with the batch's statistics
 * and updates the running ones (momentum; PyTorch's momentum=None
 * cumulative average is not offered) and num_batches_tracked; eval uses
 * the running ones. PyTorch's defaults: eps 1e-5, momentum 0.1. */
GF_API gf_module *gf_nn_batch_norm(int64_t num_features, double eps, double momentum,
                                   bool affine, bool track_running_stats, gf_dtype dtype,
                                   gf_device *dev);
/* nn.Conv1d and nn.ConvTranspose2d (weight [Ci, Co / groups, kh, kw]), with
 * nn.Conv2d's initialisation; opts NULL = PyTorch's defaults
 * (graft/layers.h). */
GF_API gf_module *gf_nn_conv1d(int64_t in_channels, int64_t out_channels, int kernel,
                               const gf_conv1d_opts *opts, bool bias, gf_dtype dtype,
                               gf_device *dev);
GF_API gf_module *gf_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels,
                                         const int kernel[2],
                                         const gf_conv_transpose2d_opts *opts, bool bias,
                                         gf_dtype dtype, gf_device *dev);
/* nn.GroupNorm (weight ones, bias zeros when affine) and nn.InstanceNorm2d
 * (PyTorch's defaults affine false, track_running_stats false; with them,
 * running statistics and num_batches_tracked as buffers, used in eval). */
GF_API gf_module *gf_nn_group_norm(int64_t num_groups, int64_t num_channels, double eps,
                                   bool affine, gf_dtype dtype, gf_device *dev);
GF_API gf_module *gf_nn_instance_norm2d(int64_t num_features, double eps, double momentum,
                                        bool affine, bool track_running_stats, gf_dtype dtype,
                                        gf_device *dev);
/* nn.LayerNorm over the last rank dims (weight ones, bias zeros). */
GF_API gf_module *gf_nn_layer_norm(const int64_t *normalized_shape, int rank, double eps,
                                   bool elementwise_affine, gf_dtype dtype, gf_device *dev);
/* nn.Embedding: weight [num, dim] from N(0, 1); forward takes i64 indices. */
GF_API gf_module *gf_nn_embedding(int64_t num_embeddings, int64_t embedding_dim,
                                  gf_dtype dtype, gf_device *dev);
/* nn.Dropout(p): active in training mode only. */
GF_API gf_module *gf_nn_dropout(double p);
/* nn.MaxPool2d / nn.AvgPool2d (opts as graft/nn.h) and
 * nn.AdaptiveAvgPool2d(output_size). */
GF_API gf_module *gf_nn_max_pool2d(const gf_pool2d_opts *opts);
GF_API gf_module *gf_nn_avg_pool2d(const gf_pool2d_opts *opts);
GF_API gf_module *gf_nn_adaptive_avg_pool2d(const int64_t output_size[2]);
/* nn.MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first):
 * in_proj_weight [3E, E] (xavier_uniform), in_proj_bias [3E] (zeros),
 * out_proj (a Linear, bias zeros). gf_module_forward takes 1 input
 * (self-attention) or 3 (query, key, value), batched 3-D. The full call:
 * masks as PyTorch's (attn_mask [L, S] or [N * heads, L, S] and
 * key_padding_mask [N, S]: bool true = may NOT attend, or float, added);
 * with need_weights, *weights (may be NULL) receives the attention weights
 * averaged over heads [N, L, S] (a new reference, recorded in an open
 * scope). Dropout on the weights in training mode only. */
GF_API gf_module *gf_nn_mha(int64_t embed_dim, int64_t num_heads, double dropout, bool bias,
                            bool batch_first, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_nn_mha_forward(gf_module *m, const gf_tensor *query, const gf_tensor *key,
                                    const gf_tensor *value, const gf_tensor *key_padding_mask,
                                    const gf_tensor *attn_mask, bool need_weights,
                                    gf_tensor **weights);
/* nn.TransformerEncoderLayer (children self_attn, linear1, dropout,
 * linear2, norm1, norm2, dropout1, dropout2; activation relu or gelu;
 * norm_first) and nn.TransformerEncoder over given layers ("layers.0"...,
 * retained; torch deep-copies one layer: make each with the same
 * arguments) and an optional final norm. gf_nn_transformer_forward runs
 * either with masks (mask as attn_mask, src_key_padding_mask as
 * key_padding_mask). PyTorch's defaults: dim_feedforward 2048, dropout
 * 0.1, layer_norm_eps 1e-5. */
GF_API gf_module *gf_nn_transformer_encoder_layer(int64_t d_model, int64_t nhead,
                                                  int64_t dim_feedforward, double dropout,
                                                  bool gelu, double layer_norm_eps,
                                                  bool batch_first, bool norm_first,
                                                  gf_dtype dtype, gf_device *dev);
GF_API gf_module *gf_nn_transformer_encoder(gf_module *const *layers, int num_layers,
                                            gf_module *norm);
GF_API gf_tensor *gf_nn_transformer_forward(gf_module *m, const gf_tensor *src,
                                            const gf_tensor *mask,
                                            const gf_tensor *src_key_padding_mask);
/* nn.TransformerDecoderLayer (children self_attn, multihead_attn, linear1,
 * dropout, linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3, in
 * PyTorch's order; activation relu or gelu; norm_first) and
 * nn.TransformerDecoder over given layers ("layers.0"..., retained: make
 * each with the same arguments) and an optional final norm.
 * gf_module_forward takes 2 inputs (tgt, memory); the full call takes
 * PyTorch's masks, each may be NULL: tgt_mask and memory_mask are the
 * self-attention's and the cross-attention's attn_mask ([T, T] / [T, S],
 * or per head [N * heads, ...]), the key padding masks [N, T] / [N, S]
 * (bool true = may NOT attend, or float, added). Deviation: tgt_is_causal
 * and memory_is_causal are absent (give the causal mask itself). Fails:
 * INVALID (not such a module, a NULL tgt or memory, a layer that is not a
 * TransformerDecoderLayer, dim_feedforward < 1, gf_nn_mha's), SHAPE (a
 * mask or input of the wrong shape, as gf_nn_mha_forward). */
GF_API gf_module *gf_nn_transformer_decoder_layer(int64_t d_model, int64_t nhead,
                                                  int64_t dim_feedforward, double dropout,
                                                  bool gelu, double layer_norm_eps,
                                                  bool batch_first, bool norm_first,
                                                  gf_dtype dtype, gf_device *dev);
GF_API gf_module *gf_nn_transformer_decoder(gf_module *const *layers, int num_layers,
                                            gf_module *norm);
GF_API gf_tensor *gf_nn_transformer_decoder_forward(gf_module *m, const gf_tensor *tgt,
                                                    const gf_tensor *memory,
                                                    const gf_tensor *tgt_mask,
                                                    const gf_tensor *memory_mask,
                                                    const gf_tensor *tgt_key_padding_mask,
                                                    const gf_tensor *memory_key_padding_mask);
/* nn.RNN (tanh or relu), nn.LSTM and nn.GRU: num_layers, bias, batch_first,
 * dropout between layers (training mode), bidirectional; parameters
 * weight_ih_l{k}[_reverse], weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} with
 * PyTorch's gate order (LSTM i, f, g, o; GRU r, z, n) and init U(+-1/sqrt(
 * hidden_size)). gf_module_forward gives the output sequence;
 * gf_nn_rnn_forward also takes h0 (and c0 for an LSTM) [num_layers *
 * directions, N, H] (NULL: zeros) and returns h_n (and c_n) as new
 * references (recorded in an open scope; may be NULL). Batched 3-D input
 * only. A layer's input side is one matmul over the whole sequence (and
 * b_hh is added there once, but for the GRU); each time step is then the
 * hidden state's matmul and the gates' ops (no fused kernel). */
typedef enum gf_rnn_mode { GF_RNN_TANH = 0, GF_RNN_RELU = 1, GF_RNN_LSTM = 2, GF_RNN_GRU = 3 } gf_rnn_mode;
GF_API gf_module *gf_nn_rnn(gf_rnn_mode mode, int64_t input_size, int64_t hidden_size,
                            int num_layers, bool bias, bool batch_first, double dropout,
                            bool bidirectional, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_nn_rnn_forward(gf_module *m, const gf_tensor *input, const gf_tensor *h0,
                                    const gf_tensor *c0, gf_tensor **h_n, gf_tensor **c_n);
/* nn.RNNCell / nn.LSTMCell / nn.GRUCell (weight_ih, weight_hh, bias_ih,
 * bias_hh): one step of x [N, input_size] from h (and c) [N, H] (NULL:
 * zeros); returns the new h, and an LSTMCell's new c in *c_out (a new
 * reference, recorded in an open scope; may be NULL). gf_module_forward
 * takes x (, h (, c)) and returns the new h. */
GF_API gf_module *gf_nn_rnn_cell(gf_rnn_mode mode, int64_t input_size, int64_t hidden_size,
                                 bool bias, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_nn_rnn_cell_forward(gf_module *m, const gf_tensor *x, const gf_tensor *h,
                                         const gf_tensor *c, gf_tensor **c_out);
/* nn.ReLU / nn.Tanh / nn.Flatten() (start_dim 1, end_dim -1): no state. */
GF_API gf_module *gf_nn_relu(void);
GF_API gf_module *gf_nn_tanh(void);
GF_API gf_module *gf_nn_flatten(void);
/* nn.Flatten(start_dim, end_dim) and nn.Unflatten(dim, sizes): forward is
 * gf_flatten_dims / gf_unflatten (negative dims count from the end; one
 * size may be -1), whose errors a wrong input gets. Unflatten fails:
 * INVALID (n outside 1..8, sizes NULL, a size below -1). */
GF_API gf_module *gf_nn_flatten_dims(int start_dim, int end_dim);
GF_API gf_module *gf_nn_unflatten(int dim, const int64_t *sizes, int n);
/* nn.PixelShuffle(r) / nn.PixelUnshuffle(r): gf_pixel_shuffle /
 * gf_pixel_unshuffle. Fails: INVALID (r < 1). */
GF_API gf_module *gf_nn_pixel_shuffle(int64_t upscale_factor);
GF_API gf_module *gf_nn_pixel_unshuffle(int64_t downscale_factor);
/* nn.Upsample(size or scale_factor, mode, align_corners): gf_interpolate
 * with a copy of opts (graft/layers.h: nearest, nearest-exact, linear on
 * [N, C, L], bilinear on [N, C, H, W], area). Fails: INVALID (opts NULL,
 * an unknown mode, neither or both of size and scale_factor, align_corners
 * with a mode other than linear / bilinear). */
GF_API gf_module *gf_nn_upsample(const gf_interpolate_opts *opts);
/* nn.ModuleList: children "0", "1", ... (each retained), no forward.
 * append adds the next index; get takes a negative index from the end
 * (BORROWED); len is the count (-1 on failure). append, get and len also
 * take a Sequential (PyTorch's Sequential appends and indexes too).
 * Fails: INVALID (n < 0, a NULL module or array, not a ModuleList or
 * Sequential), INDEX (get out of range). */
GF_API gf_module *gf_nn_module_list(gf_module *const *modules, int n);
GF_API gf_status gf_module_list_append(gf_module *list, gf_module *child);
GF_API gf_module *gf_module_list_get(const gf_module *list, int i);
GF_API int gf_module_list_len(const gf_module *list);

#ifdef __cplusplus
}
#endif
#endif
