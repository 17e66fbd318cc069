#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes tests/ops/small_ops_expected.h: inputs, PyTorch's outputs and
gradients for the small ops of core/src/ops_more.c (pixel_shuffle /
pixel_unshuffle, add / sub with alpha, dot, outer, and the in-place
activations, also through a view of a non-leaf).

    python3 tools/expected/gen_small_ops.py > tests/ops/small_ops_expected.h

Needs torch (a virtual environment with PyPI's torch); CTest does not: the
output is checked in. Everything is f64 on the CPU. Each gradient is that of
sum(y * w) for the weights w given beside it."""
import torch
import torch.nn.functional as F

D = torch.float64


def arr(name, t, comment=None):
    v = [float(x) for x in t.detach().reshape(-1)]
    if comment:
        print("/* %s */" % comment)
    print("static const double %s[%d] = {%s};" % (name, len(v), ", ".join(repr(x) for x in v)))


def vals(n, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g, dtype=D) * 2 - 1) * scale


def weights(n, seed):
    return vals(n, seed) + 0.25


def pixel():
    # shuffle: [2, 1, 8, 2, 3] (two batch dims), r = 2
    x = vals(2 * 8 * 2 * 3, 1, 3.0).reshape(2, 1, 8, 2, 3).requires_grad_()
    y = F.pixel_shuffle(x, 2)
    w = weights(y.numel(), 2).reshape(y.shape)
    (y * w).sum().backward()
    print("#define SO_PS_SHAPE 2, 1, 8, 2, 3")
    print("#define SO_PS_OUT_SHAPE %s" % ", ".join(str(s) for s in y.shape))
    arr("so_ps_x", x)
    arr("so_ps_y", y, "F.pixel_shuffle(x, 2)")
    arr("so_ps_w", w)
    arr("so_ps_gx", x.grad)
    # unshuffle: [3, 2, 4, 6], r = 2
    x = vals(3 * 2 * 4 * 6, 3, 3.0).reshape(3, 2, 4, 6).requires_grad_()
    y = F.pixel_unshuffle(x, 2)
    w = weights(y.numel(), 4).reshape(y.shape)
    (y * w).sum().backward()
    print("#define SO_PU_SHAPE 3, 2, 4, 6")
    print("#define SO_PU_OUT_SHAPE %s" % ", ".join(str(s) for s in y.shape))
    arr("so_pu_x", x)
    arr("so_pu_y", y, "F.pixel_unshuffle(x, 2)")
    arr("so_pu_w", w)
    arr("so_pu_gx", x.grad)


def alpha():
    a = vals(6, 5, 2.0).reshape(2, 3).requires_grad_()
    b = vals(3, 6, 2.0).requires_grad_()
    arr("so_al_a", a)
    arr("so_al_b", b)
    w = weights(6, 7).reshape(2, 3)
    arr("so_al_w", w)
    for name, fn in (("add", torch.add), ("sub", torch.sub)):
        a.grad = None
        b.grad = None
        y = fn(a, b, alpha=-2.5)
        (y * w).sum().backward()
        arr("so_al_%s_y" % name, y, "torch.%s(a, b, alpha=-2.5)" % name)
        arr("so_al_%s_ga" % name, a.grad)
        arr("so_al_%s_gb" % name, b.grad)
    ai = torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int64)
    bi = torch.tensor([7, -8, 9], dtype=torch.int64)
    arr("so_al_int_a", ai)
    arr("so_al_int_b", bi)
    arr("so_al_int_add_y", torch.add(ai, bi, alpha=3), "torch.add(int64 a, int64 b, alpha=3)")
    arr("so_al_int_sub_y", torch.sub(ai, bi, alpha=-4), "torch.sub(int64 a, int64 b, alpha=-4)")


def dot_outer():
    a = vals(5, 8, 2.0).requires_grad_()
    b = vals(5, 9, 2.0).requires_grad_()
    y = torch.dot(a, b)
    y.backward(torch.tensor(1.5, dtype=D))
    arr("so_dot_a", a)
    arr("so_dot_b", b)
    arr("so_dot_y", y.reshape(1), "torch.dot(a, b); gradients for grad_output 1.5")
    arr("so_dot_ga", a.grad)
    arr("so_dot_gb", b.grad)
    c = vals(3, 10, 2.0).requires_grad_()
    a.grad = None
    y = torch.outer(a, c)
    w = weights(15, 11).reshape(5, 3)
    (y * w).sum().backward()
    arr("so_outer_c", c)
    arr("so_outer_y", y, "torch.outer(a, c)")
    arr("so_outer_w", w)
    arr("so_outer_ga", a.grad)
    arr("so_outer_gc", c.grad)


ACTS = [
    ("leaky_relu", lambda y: F.leaky_relu_(y, 0.2), "F.leaky_relu_(y, 0.2)"),
    ("leaky_relu_neg", lambda y: F.leaky_relu_(y, -0.3), None),
    ("elu", lambda y: F.elu_(y, 1.3), "F.elu_(y, 1.3)"),
    ("celu", lambda y: torch.celu_(y, 0.7), "torch.celu_(y, 0.7)"),
    ("selu", lambda y: torch.selu_(y), "torch.selu_(y)"),
    ("hardtanh", lambda y: F.hardtanh_(y, -0.5, 0.8), "F.hardtanh_(y, -0.5, 0.8)"),
    ("relu6", lambda y: F.relu6(y, inplace=True), "F.relu6(y, inplace=True)"),
    ("silu", lambda y: F.silu(y, inplace=True), "F.silu(y, inplace=True)"),
    ("gelu", lambda y: torch._C._nn.gelu_(y), "gelu_(y) (erf form)"),
    ("gelu_tanh", lambda y: torch._C._nn.gelu_(y, approximate="tanh"), "gelu_(y, approximate='tanh')"),
    ("hardsigmoid", lambda y: F.hardsigmoid(y, inplace=True), "F.hardsigmoid(y, inplace=True)"),
    ("hardswish", lambda y: F.hardswish(y, inplace=True), "F.hardswish(y, inplace=True)"),
    ("mish", lambda y: F.mish(y, inplace=True), "F.mish(y, inplace=True)"),
]

XACT = [-3.7, -1.2, -0.45, -0.1, 0.3, 0.65, 1.9, 3.2, 6.4, 7.1]


def acts():
    print("#define SO_ACT_N %d" % len(XACT))
    x0 = torch.tensor(XACT, dtype=D)
    w = weights(len(XACT), 12)
    arr("so_act_x", x0)
    arr("so_act_w", w)
    for name, fn, desc in ACTS:
        x = x0.clone().requires_grad_()
        y = x * 1.0
        if name == "leaky_relu_neg":
            # PyTorch refuses this backward; the reference is the out-of-place op
            y = F.leaky_relu(y, -0.3)
            desc = "F.leaky_relu(y, -0.3) (PyTorch refuses the in-place backward)"
        else:
            fn(y)
        (y * w).sum().backward()
        arr("so_act_%s_y" % name, y, desc + " on y = x * 1; gradient of sum(y * w)")
        arr("so_act_%s_gx" % name, x.grad)
    # through a view of a non-leaf: b = x2 * 1 ([2, 5]), act_(b[1]), sum(b * w2)
    x2 = torch.tensor(XACT[::-1] + XACT, dtype=D).reshape(2, 10)[:, ::2].contiguous()
    w2 = weights(10, 13).reshape(2, 5)
    arr("so_view_x", x2)
    arr("so_view_w", w2)
    for name, fn in (("leaky_relu", lambda v: F.leaky_relu_(v, 0.2)),
                     ("gelu", lambda v: torch._C._nn.gelu_(v)),
                     ("hardtanh", lambda v: F.hardtanh_(v, -0.5, 0.8))):
        x = x2.clone().requires_grad_()
        b = x * 1.0
        fn(b[1])
        (b * w2).sum().backward()
        arr("so_view_%s_b" % name, b, "b = x * 1; %s_(b[1]); gradient of sum(b * w)" % name)
        arr("so_view_%s_gx" % name, x.grad)


def main():
    print("/* SPDX-License-Identifier: BSD-3-Clause */")
    print("/* Generated by tools/expected/gen_small_ops.py with torch %s: do not edit. */"
          % torch.__version__)
    print("#ifndef GRAFT_TESTS_SMALL_OPS_EXPECTED_H")
    print("#define GRAFT_TESTS_SMALL_OPS_EXPECTED_H")
    pixel()
    alpha()
    dot_outer()
    acts()
    print("#endif")


if __name__ == "__main__":
    main()
