/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/types.h — status codes, dtypes, errors, library lifetime. */
#ifndef GRAFT_TYPES_H
#define GRAFT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(GRAFT_BUILDING)
#define GF_API __attribute__((visibility("default")))
#else
#define GF_API
#endif

/* 0 = OK, negative = failure. Every failing call records a status and a
 * message for the calling thread (gf_last_status / gf_last_error). */
typedef enum gf_status {
    GF_OK = 0,
    GF_ERR_INVALID = -1,       /* a bad argument: NULL, a bad option value */
    GF_ERR_SHAPE = -2,         /* sizes that do not fit together */
    GF_ERR_DTYPE = -3,         /* a dtype the op does not take */
    GF_ERR_DEVICE = -4,        /* tensors on different devices; no such device */
    GF_ERR_INDEX = -5,         /* a dim or an index out of range */
    GF_ERR_OVERFLOW = -6,      /* an element or byte count that overflows */
    GF_ERR_OUT_OF_MEMORY = -7,
    GF_ERR_UNSUPPORTED = -8,   /* the device does not provide the op */
    GF_ERR_PLUGIN = -9,        /* a plugin call failed */
    GF_ERR_AUTOGRAD = -10,     /* an autograd rule was broken */
    GF_ERR_NOT_FOUND = -11
} gf_status;

/* Numeric values equal the ABI's gfp_dtype. */
typedef enum gf_dtype {
    GF_F32 = 0,
    GF_F64 = 1,
    GF_I32 = 2,
    GF_I64 = 3,
    GF_BOOL = 4,
    GF_F16 = 5,  /* f16 and bf16: computed in f32, rounded once (PyTorch's rules), */
    GF_BF16 = 6, /* on plugins that declare them */
    /* Complex: interleaved (re, im) as C99's float complex / double complex;
     * on plugins that declare them (the reference plugin does). */
    GF_C64 = 7,
    GF_C128 = 8
} gf_dtype;

#define GF_MAX_RANK 8

/* Options structs where a PyTorch default is not zero (gf_gradcheck_opts,
 * gf_adam_opts, gf_rmsprop_opts, gf_adagrad_opts, gf_adadelta_opts,
 * gf_nadam_opts, gf_radam_opts, gf_lbfgs_opts, gf_onecycle_opts,
 * gf_plateau_opts, gf_stft_opts, gf_istft_opts) begin
 * with `init`. Start from the struct's _DEFAULT initialiser, which sets it
 * to GF_OPTS_INIT and every field to PyTorch's default, then change what you
 * need: every field means its value, 0 included (Adam's beta1 = 0, lr = 0,
 * gradcheck's atol = 0).
 *   gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
 *   o.beta1 = 0.0, o.beta2 = 0.99;
 * A struct whose init is not GF_OPTS_INIT (zero-initialised, as
 * `&(gf_adam_opts){.lr = 1e-2}`) is refused with INVALID naming the
 * initialiser: before this release a 0 there selected the default, and such
 * code would now silently run with zeros. A NULL pointer still means every
 * default where a default exists. */
#define GF_OPTS_INIT 0x67664f33u

/* Name of a dtype ("f32") or "?" for an unknown value. Never NULL. */
GF_API const char *gf_dtype_name(gf_dtype dtype);
/* Bytes per element, 0 for an unknown dtype. */
GF_API size_t gf_dtype_size(gf_dtype dtype);
/* True for the real floating-point dtypes (f32, f64, f16, bf16); false for
 * complex ones, which gf_dtype_is_complex names. */
GF_API bool gf_dtype_is_float(gf_dtype dtype);
/* True for c64 and c128. */
GF_API bool gf_dtype_is_complex(gf_dtype dtype);
/* The real dtype of a complex one's parts (c64 -> f32, c128 -> f64); a
 * real dtype is returned unchanged. */
GF_API gf_dtype gf_dtype_to_real(gf_dtype dtype);
/* The complex dtype whose parts have this real dtype (f32 -> c64, f64 ->
 * c128; f16, bf16, integers and bool -> c64); a complex dtype unchanged. */
GF_API gf_dtype gf_dtype_to_complex(gf_dtype dtype);

/* The calling thread's last error message ("" when none). Never NULL; valid
 * until the thread's next failing graft call. */
GF_API const char *gf_last_error(void);
/* The calling thread's last status (GF_OK when none since gf_clear_error).
 *
 * NULL propagation: a call given a NULL tensor fails and keeps the error
 * already recorded, so gf_add(gf_mul(a, b), c) reports why gf_mul failed.
 * Once the error was read (gf_last_error or gf_last_status), the message of
 * a NULL argument names the argument and quotes that earlier error (the
 * status stays the earlier one): a stale error never hides a new mistake. */
GF_API gf_status gf_last_status(void);
GF_API void gf_clear_error(void);
#if defined(__GNUC__)
#define GF_API_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GF_API_PRINTF(a, b)
#endif
/* Records an error for the calling thread, as a failing graft call does: a
 * failure status and a printf-style message. Returns the status, so code
 * that graft calls back can `return gf_set_error(GF_ERR_INVALID, "...")`.
 *
 * That is its use: a custom function's forward or backward, a node pre- or
 * post-hook, a gradcheck function that fails says why with it. The graft call
 * that ran the callback (gf_backward, gf_grad, gf_function_apply,
 * gf_gradcheck...) then fails with the callback's status, and its message is
 * the callback's, prefixed with where it ran ("MyFn: backward: ..."). The
 * message of a graft call that failed inside the callback counts the same. A
 * callback that fails without any error recorded while it ran is reported as
 * such ("... returned GF_ERR_INVALID without a message"), never with an
 * older error of the thread. A status that is not a failure (>= 0) records
 * GF_ERR_INVALID, saying so. */
GF_API gf_status gf_set_error(gf_status status, const char *fmt, ...) GF_API_PRINTF(2, 3);
/* Short name of a status ("GF_ERR_SHAPE"). Never NULL. */
GF_API const char *gf_status_name(gf_status status);

/* Loads the plugins (done on first use anyway). Idempotent, thread-safe.
 * The outcome stays until gf_shutdown: a plugin that failed to load, to
 * initialise or to enumerate its devices is not tried again by a later
 * gf_init; only gf_shutdown followed by gf_init loads the plugins afresh.
 * Fails: only when no plugin at all could be loaded (status NOT_FOUND). */
GF_API gf_status gf_init(void);
/* Frees cached memory and shuts every plugin down. Tensors must all have been
 * released first; otherwise returns GF_ERR_INVALID and leaves plugins loaded.
 * The library is initialised again by the next call that needs it. */
GF_API gf_status gf_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif
