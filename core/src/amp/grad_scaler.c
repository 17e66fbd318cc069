/* SPDX-License-Identifier: BSD-3-Clause */
/* grad_scaler.c — loss scaling (graft/amp.h), torch.amp.GradScaler's rules.
 *
 * The scale is kept as an f32 value (PyTorch keeps a 0-dim f32 tensor), so
 * growth and backoff round as there. Per optimizer (up to SC_MAX_OPT in one
 * iteration) the scaler remembers whether it unscaled and stepped, and
 * whether an inf/NaN was found; update() reads them all and resets them.
 * The inf/NaN check ORs one bool per gradient on the gradient's device and
 * reads one value per device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/amp_internal.h"

#define SC_MAX_OPT 16

typedef enum { SC_READY = 0, SC_UNSCALED, SC_STEPPED } sc_stage;

typedef struct sc_opt {
    const gf_optimizer *opt;
    sc_stage stage;
    bool found_inf;
} sc_opt;

struct gf_grad_scaler {
    gf_grad_scaler_opts o;
    double scale;
    int64_t tracker;
    int n_opt;
    sc_opt opts[SC_MAX_OPT];
};

gf_grad_scaler_opts gf_grad_scaler_default_opts(void) {
    gf_grad_scaler_opts o = {.init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5,
                             .growth_interval = 2000, .enabled = true};
    return o;
}

static double as_f32(double v) { return (double)(float)v; }

static gf_status check_opts(const char *op, const gf_grad_scaler_opts *o) {
    if (!(o->init_scale > 0) || isinf(o->init_scale) || as_f32(o->init_scale) == 0 ||
        isinf(as_f32(o->init_scale)))
        return gf__error(GF_ERR_INVALID, "%s: init_scale %g should be a positive number that an "
                         "f32 holds (PyTorch's default is 65536)", op, o->init_scale);
    if (!(o->growth_factor > 1.0) || isinf(o->growth_factor))
        return gf__error(GF_ERR_INVALID, "%s: growth_factor %g must be > 1 and finite (default "
                         "2.0)", op, o->growth_factor);
    if (!(o->backoff_factor > 0.0 && o->backoff_factor < 1.0))
        return gf__error(GF_ERR_INVALID, "%s: backoff_factor %g must be in (0, 1) (default 0.5)",
                         op, o->backoff_factor);
    if (o->growth_interval <= 0)
        return gf__error(GF_ERR_INVALID, "%s: growth_interval %lld must be > 0 (default 2000)",
                         op, (long long)o->growth_interval);
    return GF_OK;
}

gf_grad_scaler *gf_grad_scaler_create(const gf_grad_scaler_opts *opts) {
    gf_grad_scaler_opts o = opts ? *opts : gf_grad_scaler_default_opts();
    if (check_opts("gf_grad_scaler_create", &o) != GF_OK) return NULL;
    gf_grad_scaler *s = calloc(1, sizeof *s);
    if (!s) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_grad_scaler_create: out of host memory");
        return NULL;
    }
    s->o = o;
    s->scale = as_f32(o.init_scale);
    return s;
}

void gf_grad_scaler_destroy(gf_grad_scaler *s) { free(s); }

double gf_grad_scaler_get_scale(const gf_grad_scaler *s) {
    return s && s->o.enabled ? s->scale : 1.0;
}
int64_t gf_grad_scaler_get_growth_tracker(const gf_grad_scaler *s) { return s ? s->tracker : 0; }
bool gf_grad_scaler_is_enabled(const gf_grad_scaler *s) { return s && s->o.enabled; }

gf_tensor *gf_grad_scaler_scale(gf_grad_scaler *s, const gf_tensor *loss) {
    if (!s || !loss) {
        gf__null_arg("gf_grad_scaler_scale", !s ? "s" : "loss");
        return NULL;
    }
    if (!s->o.enabled) return gf__ret(gf_tensor_retain((gf_tensor *)loss));
    return gf_mul_scalar(loss, s->scale);
}

static sc_opt *state_of(gf_grad_scaler *s, const gf_optimizer *opt, const char *op) {
    for (int i = 0; i < s->n_opt; i++)
        if (s->opts[i].opt == opt) return &s->opts[i];
    if (s->n_opt == SC_MAX_OPT) {
        gf__error(GF_ERR_INVALID, "%s: more than %d optimizers in one iteration; call "
                  "gf_grad_scaler_update between iterations", op, SC_MAX_OPT);
        return NULL;
    }
    sc_opt *st = &s->opts[s->n_opt++];
    st->opt = opt;
    st->stage = SC_READY;
    st->found_inf = false;
    return st;
}

/* Divides every gradient by the scale; *found: any inf/NaN among them. */
static gf_status unscale_grads(const gf_grad_scaler *s, gf_optimizer *opt, bool *found) {
    enum { MAX_DEV = 16 };
    gf_device *devs[MAX_DEV];
    gf_tensor *bad[MAX_DEV];
    int n_dev = 0;
    gf_status st = GF_OK;
    double inv = as_f32(1.0 / s->scale); /* PyTorch: the f32 reciprocal */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    int scope = gf__scope_suspend();
    int n = gf_optimizer_num_params(opt);
    for (int i = 0; i < n && st == GF_OK; i++) {
        gf_tensor *g = gf_tensor_grad(gf_optimizer_param(opt, i));
        if (!g) continue;
        gf_tensor *fin = gf_isfinite(g);
        gf_tensor *all = fin ? gf_all(fin, NULL, 0, false) : NULL;
        gf_tensor *nb = all ? gf_logical_not(all) : NULL;
        gf_tensor_release(fin);
        gf_tensor_release(all);
        if (!nb) st = gf__status();
        gf_device *d = gf_tensor_device(g);
        int k = 0;
        while (st == GF_OK && k < n_dev && devs[k] != d) k++;
        if (st == GF_OK && k == n_dev) {
            if (n_dev == MAX_DEV) {
                st = gf__error(GF_ERR_INVALID, "gf_grad_scaler_unscale_: gradients on more than "
                               "%d devices", MAX_DEV);
            } else {
                devs[n_dev] = d;
                bad[n_dev++] = gf_tensor_retain(nb);
            }
        } else if (st == GF_OK) {
            gf_tensor *acc = gf_logical_or(bad[k], nb);
            if (!acc) st = gf__status();
            else {
                gf_tensor_release(bad[k]);
                bad[k] = acc;
            }
        }
        gf_tensor_release(nb);
        if (st == GF_OK) st = gf_mul_scalar_(g, inv);
        gf_tensor_release(g);
    }
    *found = false;
    for (int k = 0; k < n_dev; k++) { /* one read per device */
        double v = 0;
        if (st == GF_OK) st = gf_tensor_item(bad[k], &v);
        if (v != 0) *found = true;
        gf_tensor_release(bad[k]);
    }
    gf__scope_resume(scope);
    gf_grad_mode_set(prev);
    return st;
}

gf_status gf_grad_scaler_unscale_(gf_grad_scaler *s, gf_optimizer *opt) {
    const char *op = "gf_grad_scaler_unscale_";
    if (!s || !opt) return gf__null_arg(op, !s ? "s" : "opt");
    if (!s->o.enabled) return GF_OK;
    sc_opt *st = state_of(s, opt, op);
    if (!st) return gf__status();
    if (st->stage == SC_UNSCALED)
        return gf__error(GF_ERR_INVALID, "%s: unscale_ has already been called on this optimizer "
                         "since the last gf_grad_scaler_update", op);
    if (st->stage == SC_STEPPED)
        return gf__error(GF_ERR_INVALID, "%s: unscale_ is being called after step; call it "
                         "before gf_grad_scaler_step, once per iteration", op);
    bool found = false;
    gf_status r = unscale_grads(s, opt, &found);
    if (r != GF_OK) return r;
    st->found_inf = found;
    st->stage = SC_UNSCALED;
    return GF_OK;
}

gf_status gf_grad_scaler_step(gf_grad_scaler *s, gf_optimizer *opt, bool *stepped) {
    const char *op = "gf_grad_scaler_step";
    if (stepped) *stepped = false;
    if (!s || !opt) return gf__null_arg(op, !s ? "s" : "opt");
    if (!s->o.enabled) {
        gf_status r = gf_optimizer_step(opt);
        if (r == GF_OK && stepped) *stepped = true;
        return r;
    }
    sc_opt *st = state_of(s, opt, op);
    if (!st) return gf__status();
    if (st->stage == SC_STEPPED)
        return gf__error(GF_ERR_INVALID, "%s: step has already been called on this optimizer "
                         "since the last gf_grad_scaler_update", op);
    if (st->stage == SC_READY) {
        gf_status r = gf_grad_scaler_unscale_(s, opt);
        if (r != GF_OK) return r;
    }
    st->stage = SC_STEPPED;
    if (st->found_inf) return GF_OK; /* skipped: a gradient was inf or NaN */
    gf_status r = gf_optimizer_step(opt);
    if (r == GF_OK && stepped) *stepped = true;
    return r;
}

gf_status gf_grad_scaler_update(gf_grad_scaler *s, double new_scale) {
    const char *op = "gf_grad_scaler_update";
    if (!s) return gf__null_arg(op, "s");
    if (!s->o.enabled) return GF_OK;
    if (new_scale < 0 || isnan(new_scale) || isinf(new_scale) ||
        (new_scale > 0 && (as_f32(new_scale) == 0 || isinf(as_f32(new_scale)))))
        return gf__error(GF_ERR_INVALID, "%s: new_scale %g must be a positive value an f32 holds "
                         "(or 0 for none)", op, new_scale);
    if (new_scale > 0) {
        s->scale = as_f32(new_scale);
    } else {
        if (s->n_opt == 0)
            return gf__error(GF_ERR_INVALID, "%s: no inf checks were recorded before update; call "
                             "gf_grad_scaler_unscale_ or gf_grad_scaler_step first", op);
        bool found = false;
        for (int i = 0; i < s->n_opt; i++) found = found || s->opts[i].found_inf;
        if (found) {
            s->scale = as_f32(s->scale * s->o.backoff_factor);
            s->tracker = 0;
        } else if (s->tracker + 1 >= s->o.growth_interval) {
            double grown = as_f32(s->scale * s->o.growth_factor);
            if (!isinf(grown)) s->scale = grown; /* PyTorch keeps the old scale on overflow */
            s->tracker = 0;
        } else {
            s->tracker++;
        }
    }
    s->n_opt = 0;
    return GF_OK;
}

/* ------------------------------------------------------------ state */
static const char *const keys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                   "_growth_tracker"};
#define N_KEYS 5

static bool key_name(char *buf, size_t n, const char *prefix, int i) {
    int w = snprintf(buf, n, "%s%s", prefix ? prefix : "", keys[i]);
    return w >= 0 && (size_t)w < n;
}

gf_tensor_dict *gf_grad_scaler_state_dict(const gf_grad_scaler *s, const char *prefix) {
    const char *op = "gf_grad_scaler_state_dict";
    if (!s) {
        gf__null_arg(op, "s");
        return NULL;
    }
    double v[N_KEYS] = {s->o.enabled ? s->scale : 1.0, s->o.growth_factor, s->o.backoff_factor,
                        (double)s->o.growth_interval, (double)s->tracker};
    gf_tensor_dict *d = gf_tensor_dict_new();
    if (!d) return NULL;
    int scope = gf__scope_suspend();
    for (int i = 0; i < N_KEYS; i++) {
        char name[256];
        gf_tensor *t = NULL;
        if (!key_name(name, sizeof name, prefix, i)) {
            gf__error(GF_ERR_INVALID, "%s: prefix is too long (at most 200 characters)", op);
        } else {
            t = gf_full(NULL, 0, v[i], GF_F64, NULL);
        }
        gf_status st = t ? gf_tensor_dict_set(d, name, t) : gf__status();
        gf_tensor_release(t);
        if (st != GF_OK) {
            gf_tensor_dict_destroy(d);
            gf__scope_resume(scope);
            return NULL;
        }
    }
    gf__scope_resume(scope);
    return d;
}

gf_status gf_grad_scaler_load_state_dict(gf_grad_scaler *s, const gf_tensor_dict *d,
                                         const char *prefix) {
    const char *op = "gf_grad_scaler_load_state_dict";
    if (!s || !d) return gf__null_arg(op, !s ? "s" : "d");
    double v[N_KEYS];
    for (int i = 0; i < N_KEYS; i++) {
        char name[256];
        if (!key_name(name, sizeof name, prefix, i))
            return gf__error(GF_ERR_INVALID, "%s: prefix is too long", op);
        gf_tensor *t = gf_tensor_dict_get(d, name);
        if (!t) return gf__error(GF_ERR_NOT_FOUND, "%s: the state has no \"%s\"", op, name);
        gf_status st = gf_tensor_item(t, &v[i]); /* t is borrowed */
        if (st != GF_OK) return st;
    }
    gf_grad_scaler_opts o = s->o;
    o.init_scale = v[0];
    o.growth_factor = v[1];
    o.backoff_factor = v[2];
    if (!(v[3] >= 1 && v[3] <= 9.0e18 && v[3] == floor(v[3])) ||
        !(v[4] >= 0 && v[4] <= 9.0e18 && v[4] == floor(v[4])))
        return gf__error(GF_ERR_INVALID, "%s: growth_interval %g and _growth_tracker %g must be "
                         "whole numbers (>= 1 and >= 0)", op, v[3], v[4]);
    o.growth_interval = (int64_t)v[3];
    gf_status st = check_opts(op, &o);
    if (st != GF_OK) return st;
    s->o = o;
    s->scale = as_f32(v[0]);
    s->tracker = (int64_t)v[4];
    s->n_opt = 0;
    return GF_OK;
}
