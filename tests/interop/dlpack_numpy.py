#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""DLPack between graft and NumPy, both ways, in one process.

    dlpack_numpy.py LIBGRAFT_SO

graft is loaded with ctypes. graft -> NumPy: gf_to_dlpack's managed tensor
in a "dltensor" capsule, consumed by numpy.from_dlpack; NumPy -> graft: the
capsule of ndarray.__dlpack__() handed to gf_from_dlpack, renamed
"used_dltensor" as the protocol requires once a consumer owns it. Both
directions share memory (writes on one side are read on the other) and each
side gives its memory back exactly when the other lets go. Expected values
are written out here. Exits 77 (skipped) without numpy >= 1.22 (from_dlpack).
"""
import ctypes
import gc
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for this python (Debian: python3-numpy)")
    sys.exit(77)
if not hasattr(np, "from_dlpack"):
    print("SKIP: numpy %s has no from_dlpack (1.22 or newer has)" % np.__version__)
    sys.exit(77)

GF_F32, GF_F64, GF_I32 = 0, 1, 2

lib = ctypes.CDLL(sys.argv[1])
vp = ctypes.c_void_p
lib.gf_device_find.restype = vp
lib.gf_device_find.argtypes = [ctypes.c_char_p]
lib.gf_arange.restype = vp
lib.gf_arange.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.c_double, ctypes.c_int, vp]
lib.gf_tensor_release.argtypes = [vp]
lib.gf_to_dlpack.restype = vp
lib.gf_to_dlpack.argtypes = [vp]
lib.gf_from_dlpack.restype = vp
lib.gf_from_dlpack.argtypes = [vp, vp]
lib.gf_mul_scalar_.restype = ctypes.c_int
lib.gf_mul_scalar_.argtypes = [vp, ctypes.c_double]
lib.gf_mul_scalar_int_.restype = ctypes.c_int
lib.gf_mul_scalar_int_.argtypes = [vp, ctypes.c_int64]
lib.gf_tensor_to_host.restype = ctypes.c_int
lib.gf_tensor_to_host.argtypes = [vp, vp, ctypes.c_size_t]
lib.gf_last_error.restype = ctypes.c_char_p
lib.gf_tensor_numel.restype = ctypes.c_int64
lib.gf_tensor_numel.argtypes = [vp]


class MemoryStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("bytes_in_use", "peak", "cached", "allocs", "frees")]


lib.gf_memory_get_stats.argtypes = [vp, ctypes.POINTER(MemoryStats)]

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [vp, ctypes.c_char_p, vp]
api.PyCapsule_GetPointer.restype = vp
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAILED:", what)


cpu = lib.gf_device_find(b"cpu")
if not cpu:
    print("no cpu device:", lib.gf_last_error())
    sys.exit(1)


def in_use():
    st = MemoryStats()
    lib.gf_memory_get_stats(cpu, ctypes.byref(st))
    return st.bytes_in_use


class Exported:
    """What numpy.from_dlpack asks of a producer."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def graft_values(t, dtype):
    n = lib.gf_tensor_numel(t)
    out = np.empty(n, dtype=dtype)
    rc = lib.gf_tensor_to_host(t, out.ctypes.data, out.nbytes)
    check(rc == 0, "gf_tensor_to_host: %s" % lib.gf_last_error())
    return out


# ---- graft -> NumPy
base = in_use()
t = lib.gf_arange(0.0, 6.0, 1.0, GF_F32, cpu)
check(bool(t), "gf_arange: %s" % lib.gf_last_error())
managed = lib.gf_to_dlpack(t)
check(bool(managed), "gf_to_dlpack: %s" % lib.gf_last_error())
a = np.from_dlpack(Exported(api.PyCapsule_New(managed, b"dltensor", None)))
check(a.dtype == np.float32 and a.shape == (6,), "dtype/shape %s %s" % (a.dtype, a.shape))
check(a.tolist() == [0, 1, 2, 3, 4, 5], "values %s" % a.tolist())
check(lib.gf_mul_scalar_(t, 2.0) == 0, "gf_mul_scalar_")  # graft writes, NumPy reads
check(a.tolist() == [0, 2, 4, 6, 8, 10], "NumPy sees graft's write: %s" % a.tolist())
if a.flags.writeable:  # NumPy before 2.0 marks DLPack imports read-only
    a[2] = 40  # NumPy writes, graft reads
    check(graft_values(t, np.float32).tolist() == [0, 2, 40, 6, 8, 10],
          "graft sees NumPy's write")
total = float(a.sum())
lib.gf_tensor_release(t)
check(in_use() > base, "the export keeps graft's memory while NumPy holds it")
check(float(a.sum()) == total, "NumPy still reads it after graft released its tensor")
del a
gc.collect()
check(in_use() == base, "NumPy let go: graft's memory is freed (%d bytes still in use)"
      % (in_use() - base))

# ---- NumPy -> graft: adopted, the array kept alive by graft alone
arr = np.arange(12, dtype=np.float64).reshape(3, 4)
refs = sys.getrefcount(arr)
cap = arr.__dlpack__()
ptr = api.PyCapsule_GetPointer(cap, b"dltensor")
g = lib.gf_from_dlpack(ptr, cpu)
check(bool(g), "gf_from_dlpack: %s" % lib.gf_last_error())
api.PyCapsule_SetName(cap, b"used_dltensor")  # graft owns it now
del cap
check(in_use() == base, "adopted, not copied into graft's memory")
check(graft_values(g, np.float64).tolist() == list(range(12)), "values")
check(lib.gf_mul_scalar_(g, -1.0) == 0, "gf_mul_scalar_ on NumPy's memory")
check(arr[2, 3] == -11 and arr[0, 1] == -1, "NumPy sees graft's in-place write")
arr[1, 1] = 0.5
check(graft_values(g, np.float64)[5] == 0.5, "graft sees NumPy's write")
check(sys.getrefcount(arr) > refs, "graft's import holds a reference to the array")
lib.gf_tensor_release(g)
gc.collect()
check(sys.getrefcount(arr) == refs, "graft released the array (deleter ran once)")

# a strided view: every other column of an int32 matrix
m = np.arange(20, dtype=np.int32).reshape(4, 5)
view = m[:, ::2]
cap = view.__dlpack__()
g = lib.gf_from_dlpack(api.PyCapsule_GetPointer(cap, b"dltensor"), cpu)
check(bool(g), "gf_from_dlpack (strided): %s" % lib.gf_last_error())
api.PyCapsule_SetName(cap, b"used_dltensor")
del cap
want = [0, 2, 4, 5, 7, 9, 10, 12, 14, 15, 17, 19]
check(graft_values(g, np.int32).tolist() == want, "strided values")
check(lib.gf_mul_scalar_int_(g, 3) == 0, "in place on a strided view")
check(m[1].tolist() == [15, 6, 21, 8, 27], "only the viewed elements changed: %s" % m[1].tolist())
lib.gf_tensor_release(g)

# ---- DLPack 1.x (DLManagedTensorVersioned), with a NumPy that speaks it
# (2.1 and later: __dlpack__(max_version=...)); Debian 12's 1.24 does not.
lib.gf_to_dlpack_versioned.restype = vp
lib.gf_to_dlpack_versioned.argtypes = [vp]
lib.gf_from_dlpack_versioned.restype = vp
lib.gf_from_dlpack_versioned.argtypes = [vp, vp]
try:
    probe = np.zeros(1).__dlpack__(max_version=(1, 0))
    versioned = api.PyCapsule_GetPointer(probe, b"dltensor_versioned") is not None
except (TypeError, ValueError):
    versioned = False
    ctypes.pythonapi.PyErr_Clear()


class ExportedV:
    """A producer that hands out DLPack 1.x capsules when asked for them."""

    def __init__(self, managed):
        self.managed = managed

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        check(max_version is not None and max_version[0] >= 1, "consumer asks for 1.x")
        return api.PyCapsule_New(self.managed, b"dltensor_versioned", None)

    def __dlpack_device__(self):
        return (1, 0)


if not versioned:
    print("DLPack 1.x part skipped: numpy %s has no versioned DLPack (2.1 or newer has)"
          % np.__version__)
else:
    base = in_use()
    t = lib.gf_arange(0.0, 4.0, 1.0, GF_F64, cpu)
    a = np.from_dlpack(ExportedV(lib.gf_to_dlpack_versioned(t)))
    check(a.tolist() == [0, 1, 2, 3] and a.dtype == np.float64, "versioned export: %s" % a)
    check(lib.gf_mul_scalar_(t, 3.0) == 0 and a[3] == 9, "NumPy sees graft's write (1.x)")
    lib.gf_tensor_release(t)
    del a
    gc.collect()
    check(in_use() == base, "NumPy let go of a 1.x export")
    arr = np.arange(6, dtype=np.float32)
    refs = sys.getrefcount(arr)
    cap = arr.__dlpack__(max_version=(1, 0))
    g = lib.gf_from_dlpack_versioned(api.PyCapsule_GetPointer(cap, b"dltensor_versioned"), cpu)
    check(bool(g), "gf_from_dlpack_versioned: %s" % lib.gf_last_error())
    api.PyCapsule_SetName(cap, b"used_dltensor_versioned")
    del cap
    check(lib.gf_mul_scalar_(g, 2.0) == 0 and arr[5] == 10, "adopted 1.x import: %s" % arr)
    lib.gf_tensor_release(g)
    gc.collect()
    check(sys.getrefcount(arr) == refs, "graft released the 1.x producer")
    print("DLPack 1.x part ran with numpy %s" % np.__version__)

print("%s: %d failures" % ("FAILED" if failures else "ok", failures))
sys.exit(1 if failures else 0)
