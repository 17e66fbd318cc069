/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/interop.h — exchanging tensors with other tools: DLPack (memory
 * shared with array libraries in the same process) and files (.npy and .npz
 * as NumPy writes them, .safetensors, and the IDX files of MNIST-style data
 * sets).
 *
 * Same conventions as the rest of graft: functions returning a tensor return
 * a new reference or NULL with the thread's error set; the others return a
 * gf_status. File errors name the file and, for I/O failures, the system's
 * reason (strerror). */
#ifndef GRAFT_INTEROP_H
#define GRAFT_INTEROP_H

#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ host memory
 * Memory another library owns, used in place: no copy. */

/* A tensor over host memory the caller owns, without copying it. data is the
 * address of element 0; strides (in elements, >= 0; NULL: row-major) lay
 * the elements out from there. dev (NULL: gf_device_default()) must be a
 * host-addressable device whose plugin can adopt memory (plugin ABI >= 1.1:
 * the reference and cpu_onednn plugins can). Writes through the tensor (and
 * its views) go to the memory itself, and writes to the memory are seen by
 * the tensor once work pending on its device is done (gf_device_synchronize).
 * The memory must stay valid until release(ctx) is called (release may be
 * NULL): exactly once, from whichever thread drops the last reference to it
 * (the tensor, its views, or a graft export of it), after the device is done
 * with it. data must be aligned to the dtype's size. Adopted memory is not
 * counted in gf_memory_get_stats.
 * Returns a new reference. On failure release is not called.
 * Fails: INVALID (NULL data for a non-empty tensor, negative strides,
 * misaligned data), UNSUPPORTED (a device that cannot adopt memory: copy with
 * gf_tensor_from_host instead), and the errors of gf_empty. */
GF_API gf_tensor *gf_from_host_memory(void *data, const int64_t *sizes, const int64_t *strides,
                                      int rank, gf_dtype dtype, gf_device *dev,
                                      void (*release)(void *ctx), void *ctx);

/* ------------------------------------------------------------ DLPack
 * The structs of <dlpack/dlpack.h>: the unversioned DLManagedTensor (DLPack
 * 0.6 and later) and DLManagedTensorVersioned (DLPack 1.x). Callers include
 * <graft/dlpack.h>, which includes <dlpack/dlpack.h> and, when that is older
 * than 1.0 (Debian 12 ships 0.6), declares the 1.x structs with the layout
 * DLPack 1.0 defines. graft's own headers do not need them.
 *
 * dtypes: f32, f64, f16 (kDLFloat), i32, i64 (kDLInt), bf16 (kDLBfloat),
 * c64, c128 (kDLComplex 64 / 128, interleaved re, im), bool (type code 6
 * with 8 bits: kDLBool of DLPack >= 0.8). Lanes are 1. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;

/* Exports t without copying: the managed tensor points into t's memory
 * (data = the start of t's storage, byte_offset = t's offset in bytes,
 * strides always given, in elements). It holds a reference to the memory
 * until the consumer calls its deleter, exactly once, from any thread. Writes
 * through either side are seen by the other. Waits for work pending on the
 * device first, so the data is ready.
 * Returns a new managed tensor, or NULL.
 * Fails: INVALID (t NULL), DEVICE (memory the host cannot address, e.g. a GPU:
 * copy it to a "cpu" device first with gf_to_device), AUTOGRAD (t requires
 * grad: export gf_detach(t); DLPack carries no history), OUT_OF_MEMORY. */
GF_API struct DLManagedTensor *gf_to_dlpack(const gf_tensor *t);
/* The same as a DLPack 1.x DLManagedTensorVersioned: version 1.0 (or the
 * version of the <dlpack/dlpack.h> graft was built with, if newer), flags 0
 * (writable, not a copy). */
GF_API struct DLManagedTensorVersioned *gf_to_dlpack_versioned(const gf_tensor *t);

/* Imports a DLPack tensor on host memory (kDLCPU, kDLCUDAHost, kDLROCMHost)
 * onto dev (NULL: the tensor's own device when it came from gf_to_dlpack,
 * otherwise gf_device_default()).
 *  - A tensor that graft exported, imported onto its own device, is a view of
 *    the same storage.
 *  - Other memory is adopted without a copy (gf_from_host_memory) when dev
 *    can adopt memory and the strides are >= 0 and the data aligned: the
 *    result shares the producer's memory, and the producer's deleter runs
 *    when graft drops its last reference to it, from that thread.
 *  - Otherwise, and always for bool (so every byte is 0 or 1), the elements
 *    are copied into a new contiguous tensor (negative strides are honoured)
 *    and the deleter runs before this returns.
 * On success graft owns `managed`: the caller must not use it again, and its
 * deleter (if any) is called exactly once. On failure nothing is called and
 * the caller still owns it.
 * Returns a new reference. Fails: INVALID (NULL, ndim > 8, negative sizes,
 * NULL data for a non-empty tensor, lanes != 1), DTYPE (a type graft does not
 * have: unsigned, complex32, f8...), DEVICE (memory not addressable by the
 * host), OVERFLOW, OUT_OF_MEMORY. */
GF_API gf_tensor *gf_from_dlpack(struct DLManagedTensor *managed, gf_device *dev);
/* The same for DLPack 1.x, and:
 *  - a major version other than 1 is refused (INVALID, naming it): its
 *    layout is unknown to this graft;
 *  - READ_ONLY memory is copied (graft tensors are writable), and the
 *    deleter runs before this returns. */
GF_API gf_tensor *gf_from_dlpack_versioned(struct DLManagedTensorVersioned *managed,
                                           gf_device *dev);

/* ------------------------------------------------------------ .npy
 * NumPy's own format, versions 1.0, 2.0 and 3.0 on load.
 *
 * Saving writes version 1.0 (2.0 when the header needs it), little-endian,
 * C order, whatever t's strides are. dtypes: f32 '<f4', f64 '<f8', i32 '<i4',
 * i64 '<i8', bool '|b1', f16 '<f2', c64 '<c8', c128 '<c16'. bf16 has no NumPy dtype: convert it to f32
 * first (or use safetensors). A file that fails half-way is removed.
 * Fails: INVALID (NULL), DTYPE (bf16), NOT_FOUND / INVALID for a path that
 * cannot be created (message with the system's reason), and the errors of
 * reading t from its device. */
GF_API gf_status gf_save_npy(const gf_tensor *t, const char *path);

/* Loads a .npy file onto dev (NULL = gf_device_default()).
 * Accepted dtypes, either byte order: b1 -> bool; f2, f4, f8 -> f16, f32, f64;
 * c8, c16 -> c64, c128;
 * i4, i8 -> i32, i64; the narrower integers i1, u1, i2, u2 widen to i32 and u4
 * to i64 (exact); u8 -> i64 when every value fits (else OVERFLOW).
 * fortran_order True is accepted: the result is the same array, C order.
 * Returns a new reference (contiguous). Fails: NOT_FOUND (no such file),
 * INVALID (bad magic, malformed header, truncated data, I/O errors, object
 * arrays), DTYPE (complex256, strings, structured, dates, long double), and the
 * device's errors (a dtype it does not store, out of memory). */
GF_API gf_tensor *gf_load_npy(const char *path, gf_device *dev);

/* ------------------------------------------------------------ dictionaries
 * An ordered set of named tensors (a state dict): loaded from a file (.npz,
 * .safetensors, in file order), returned by gf_optimizer_state_dict, or
 * built in memory with gf_tensor_dict_new / _set. Sole owner: destroy it
 * with gf_tensor_dict_destroy. */
typedef struct gf_tensor_dict gf_tensor_dict;

/* An empty dict. Fails: OUT_OF_MEMORY. */
GF_API gf_tensor_dict *gf_tensor_dict_new(void);
/* d[name] = t (the dict retains t): an existing name keeps its position and
 * releases its old tensor, a new one goes last, as a Python dict. Names are
 * any non-empty string of up to 4096 bytes. Fails: INVALID (NULL argument,
 * empty or overlong name), OUT_OF_MEMORY (d unchanged). */
GF_API gf_status gf_tensor_dict_set(gf_tensor_dict *d, const char *name, gf_tensor *t);
/* Removes name, keeping the others' order. Fails: INVALID (NULL),
 * NOT_FOUND (no such name). */
GF_API gf_status gf_tensor_dict_remove(gf_tensor_dict *d, const char *name);

GF_API int gf_tensor_dict_size(const gf_tensor_dict *d); /* 0 for NULL */
/* The i-th name, NULL (INDEX) when out of range. Valid while d lives. */
GF_API const char *gf_tensor_dict_name(const gf_tensor_dict *d, int i);
/* The i-th tensor, BORROWED (valid while d lives; retain it to keep it
 * longer). NULL (INDEX) when out of range. */
GF_API gf_tensor *gf_tensor_dict_at(const gf_tensor_dict *d, int i);
/* The tensor named name, BORROWED. NULL with NOT_FOUND (the message lists
 * the names) when absent. */
GF_API gf_tensor *gf_tensor_dict_get(const gf_tensor_dict *d, const char *name);
/* Releases the dict's references. NULL is harmless. */
GF_API void gf_tensor_dict_destroy(gf_tensor_dict *d);
/* String metadata beside the tensors (safetensors' "__metadata__", str to
 * str: gf_load_safetensors reads it, gf_save_safetensors_dict writes it;
 * an optimiser's state dict keeps its param_groups there). set copies key
 * and value (value NULL removes the key; a missing key is not an error);
 * keys are 1 to 4096 bytes. get returns the value (valid until the key
 * changes or d is destroyed), NULL with NOT_FOUND when absent. Fails:
 * INVALID (NULL d or key, bad key), OUT_OF_MEMORY; key_at: INDEX. */
GF_API gf_status gf_tensor_dict_set_metadata(gf_tensor_dict *d, const char *key,
                                             const char *value);
GF_API const char *gf_tensor_dict_get_metadata(const gf_tensor_dict *d, const char *key);
GF_API int gf_tensor_dict_metadata_count(const gf_tensor_dict *d); /* 0 for NULL */
GF_API const char *gf_tensor_dict_metadata_key(const gf_tensor_dict *d, int i);

/* ------------------------------------------------------------ .npz
 * An uncompressed ZIP of .npy members, as np.savez writes it (np.load(path)
 * gives a dict-like object of the names). */

/* Saves n tensors under names[i] (member "<name>.npy"). Names are non-empty,
 * distinct, without NUL. Each tensor is written as gf_save_npy writes it.
 * Fails: INVALID (NULL, n < 1, a bad or repeated name, an archive or member
 * over 4 GiB: zip64 is not written), and gf_save_npy's errors. */
GF_API gf_status gf_save_npz(const char *const *names, const gf_tensor *const *tensors, int n,
                             const char *path);

/* Loads every "<name>.npy" member of an .npz onto dev (NULL = default
 * device), as gf_load_npy loads a file; other members are skipped (logged
 * at warn level). Reads zip64 archives. Checks each member's CRC-32.
 * Returns a new dict, or NULL. Fails: gf_load_npy's errors, INVALID (not a
 * ZIP, corrupt directory, CRC mismatch), UNSUPPORTED (compressed members:
 * np.savez_compressed; encrypted members). */
GF_API gf_tensor_dict *gf_load_npz(const char *path, gf_device *dev);

/* ------------------------------------------------------------ safetensors
 * The safetensors format: an 8-byte little-endian header length, a JSON
 * header {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {...}},
 * then the little-endian data.
 *
 * Saving writes every graft dtype but c128 (BOOL, F16, BF16, F32, F64, I32, I64,
 * C64; the format has no 128-bit complex: DTYPE, saying what to do), in
 * the order given, C order, no metadata. Names as for gf_save_npz, and not
 * "__metadata__". n may be 0 (the empty file of save_file({}); names and
 * tensors may then be NULL). Fails as gf_save_npz. */
GF_API gf_status gf_save_safetensors(const char *const *names, const gf_tensor *const *tensors,
                                     int n, const char *path);
/* Saves every entry of d, in its order (gf_save_safetensors' rules and
 * errors; INVALID for d NULL). */
GF_API gf_status gf_save_safetensors_dict(const gf_tensor_dict *d, const char *path);

/* Loads every tensor onto dev (NULL = default device), in the header's order
 * ("__metadata__" is skipped). dtypes as gf_load_npy: BOOL, F16, BF16, F32,
 * F64, I32, I64, C64 as themselves; U8, I8, I16, U16 widen to i32, U32 to i64, U64
 * to i64 when the values fit. Returns a new dict, or NULL.
 * Fails: NOT_FOUND (no file), INVALID (malformed header or JSON, offsets that
 * do not match the shape or the file, truncated data, I/O errors), DTYPE
 * (F8 types and others graft does not have), and the device's errors. */
GF_API gf_tensor_dict *gf_load_safetensors(const char *path, gf_device *dev);

/* ------------------------------------------------------------ IDX
 * The format of MNIST, Fashion-MNIST and their kin: a 4-byte magic (00 00,
 * an element type code, the number of dimensions), the sizes as big-endian
 * u32, then the elements, row-major, big-endian. */

/* Loads an IDX file onto dev (NULL = default device), plain or
 * gzip-compressed (train-images-idx3-ubyte.gz): gzip is recognised by its
 * magic bytes, whatever the file's name, and needs graft built with zlib.
 * Element types: 08 unsigned byte, 09 signed byte and 0B short widen to i32
 * (graft has no 8- or 16-bit integers: gf_to_dtype(t, GF_F32) for pixels);
 * 0C int -> i32, 0D float -> f32, 0E double -> f64. Up to 8 dimensions.
 * The data must be exactly as long as the sizes say.
 * Returns a new reference (contiguous).
 * Fails: NOT_FOUND (no such file); INVALID, naming the file and what is
 * wrong: a wrong magic, an unknown type code, more than 8 dimensions, a
 * truncated file or gzip stream, data longer or shorter than the sizes
 * declare, a corrupt gzip stream (zlib's reason), I/O errors; OVERFLOW
 * (sizes whose product no tensor can hold); UNSUPPORTED (a gzip file when
 * graft was built without zlib: install zlib1g-dev and rebuild, or gunzip
 * it); and the device's errors. */
GF_API gf_tensor *gf_load_idx(const char *path, gf_device *dev);

#ifdef __cplusplus
}
#endif
#endif
