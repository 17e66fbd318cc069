/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_dict_meta.c — a tensor dict's string metadata: safetensors'
 * "__metadata__" (str -> str), read by gf_load_safetensors, written by
 * gf_save_safetensors_dict, and where an optimiser's state dict keeps its
 * param_groups (graft/autograd.h). */
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

#define META_MAX_KEY 4096

static int meta_find(const gf_tensor_dict *d, const char *key) {
    for (int i = 0; i < d->n_meta; i++)
        if (!strcmp(d->meta_keys[i], key)) return i;
    return -1;
}

const char *gf__dict_meta(const gf_tensor_dict *d, const char *key) {
    int i = d && key ? meta_find(d, key) : -1;
    return i >= 0 ? d->meta_values[i] : NULL;
}

gf_status gf__dict_meta_put(gf_tensor_dict *d, const char *key, char *value, bool own_value) {
    char *v = own_value ? value : strdup(value);
    if (!v) return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a metadata value");
    int i = meta_find(d, key);
    if (i >= 0) {
        free(d->meta_values[i]);
        d->meta_values[i] = v;
        return GF_OK;
    }
    if (d->n_meta == d->cap_meta) {
        int cap = d->cap_meta ? d->cap_meta * 2 : 4;
        char **nk = realloc(d->meta_keys, (size_t)cap * sizeof *nk);
        if (nk) d->meta_keys = nk;
        char **nv = nk ? realloc(d->meta_values, (size_t)cap * sizeof *nv) : NULL;
        if (nv) d->meta_values = nv;
        if (!nk || !nv) {
            free(v);
            return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory growing the metadata");
        }
        d->cap_meta = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a metadata key");
    }
    d->meta_keys[d->n_meta] = k;
    d->meta_values[d->n_meta] = v;
    d->n_meta++;
    return GF_OK;
}

void gf__dict_clear_metadata(gf_tensor_dict *d) {
    for (int i = 0; i < d->n_meta; i++) {
        free(d->meta_keys[i]);
        free(d->meta_values[i]);
    }
    free(d->meta_keys);
    free(d->meta_values);
    d->meta_keys = d->meta_values = NULL;
    d->n_meta = d->cap_meta = 0;
}

gf_status gf_tensor_dict_set_metadata(gf_tensor_dict *d, const char *key, const char *value) {
    const char *op = "gf_tensor_dict_set_metadata";
    if (!d) return gf__null_arg_of(op, "d", GF__ARG_DICT);
    if (!key) return gf__error(GF_ERR_INVALID, "%s: key is NULL; pass the metadata key", op);
    size_t len = strnlen(key, META_MAX_KEY + 1);
    if (len == 0 || len > META_MAX_KEY)
        return gf__error(GF_ERR_INVALID, "%s: the key is %s; give a key of 1 to 4096 bytes", op,
                         len ? "over 4096 bytes" : "empty");
    if (!value) {
        int i = meta_find(d, key);
        if (i < 0) return GF_OK;
        free(d->meta_keys[i]);
        free(d->meta_values[i]);
        memmove(d->meta_keys + i, d->meta_keys + i + 1,
                (size_t)(d->n_meta - i - 1) * sizeof *d->meta_keys);
        memmove(d->meta_values + i, d->meta_values + i + 1,
                (size_t)(d->n_meta - i - 1) * sizeof *d->meta_values);
        d->n_meta--;
        return GF_OK;
    }
    return gf__dict_meta_put(d, key, (char *)value, false);
}

const char *gf_tensor_dict_get_metadata(const gf_tensor_dict *d, const char *key) {
    const char *op = "gf_tensor_dict_get_metadata";
    if (!d) {
        gf__null_arg_of(op, "d", GF__ARG_DICT);
        return NULL;
    }
    if (!key) {
        gf__error(GF_ERR_INVALID, "%s: key is NULL; pass the metadata key", op);
        return NULL;
    }
    const char *v = gf__dict_meta(d, key);
    if (!v) gf__error(GF_ERR_NOT_FOUND, "%s: no metadata key '%.300s' (%d key%s)", op, key,
                      d->n_meta, d->n_meta == 1 ? "" : "s");
    return v;
}

int gf_tensor_dict_metadata_count(const gf_tensor_dict *d) { return d ? d->n_meta : 0; }

const char *gf_tensor_dict_metadata_key(const gf_tensor_dict *d, int i) {
    const char *op = "gf_tensor_dict_metadata_key";
    if (!d) {
        gf__null_arg_of(op, "d", GF__ARG_DICT);
        return NULL;
    }
    if (i < 0 || i >= d->n_meta) {
        gf__error(GF_ERR_INDEX, "%s: index %d is out of range [0, %d)", op, i, d->n_meta);
        return NULL;
    }
    return d->meta_keys[i];
}
