/* test_rules_devices.c — autograd rules whose values the device computes
 * (docs/autograd.md): .grad accumulated in place (rule 2), gradients at
 * non-differentiable points (rule 24). Built with the other rule tests and
 * also run on every device of the cross-device suites (tests/CMakeLists.txt):
 * tensors are made on the default device (GRAFT_DEVICE). */
#include "test_rules_util.h"

/* ------------------------------------------------------------ rule 2 */
static gf_tensor *square_sum(gf_tensor *x) {
    gf_tensor *sq = gf_mul(x, x);
    gf_tensor *y = gf_sum(sq, NULL, 0, false);
    gf_tensor_release(sq);
    return y;
}

static void rule02_accumulates_into_the_same_tensor(void) {
    /* PyTorch: a reference to .grad taken after the first backward is
     * x.grad after the second, and reads the sum. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *y1 = square_sum(x);
    CHECK_OK(gf_backward(y1, NULL, NULL));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK_VALS(g1, DV(2, 4, 6), 3, 0);
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(g2 == g1);
    CHECK_VALS(g1, DV(4, 8, 12), 3, 0);
    CHECK(!gf_tensor_requires_grad(g1));
    /* and the same in f32 */
    gf_tensor *xf = gf_to_dtype(x, GF_F32);
    gf_tensor *xl = gf_detach(xf);
    CHECK_OK(gf_tensor_set_requires_grad(xl, true));
    for (int k = 0; k < 3; k++) {
        gf_tensor *y = square_sum(xl);
        CHECK_OK(gf_backward(y, NULL, NULL));
        gf_tensor_release(y);
    }
    gf_tensor *gf = gf_tensor_grad(xl);
    CHECK(gf && gf_tensor_dtype(gf) == GF_F32);
    CHECK_VALS(gf, DV(6, 12, 18), 3, 0);
    gf_tensor_release(gf);
    gf_tensor_release(xl);
    gf_tensor_release(xf);
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    gf_tensor_release(x);
}

static void rule02_first_grad_never_aliases_the_engines(void) {
    /* SumBackward's gradient is an expanded view of one element, and a
     * reshape's is a view of the caller's grad_output: .grad is a tensor
     * of its own, so the next backward adds into it and nothing else. */
    gf_tensor *x = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *s = gf_sum(x, NULL, 0, false);
    CHECK_OK(gf_backward(s, NULL, NULL));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK_VALS(g1, DV(1, 1, 1, 1), 4, 0);
    gf_tensor *s2 = gf_sum(x, NULL, 0, false);
    CHECK_OK(gf_backward(s2, NULL, NULL));
    CHECK_VALS(g1, DV(2, 2, 2, 2), 4, 0); /* into the same tensor, every element */
    CHECK_OK(gf_tensor_set_grad(x, NULL));

    gf_tensor *r = gf_reshape(x, SZ(4), 1);
    gf_tensor *go = ag_vec(DV(1, 2, 3, 4), 4);
    CHECK_OK(gf_backward(r, go, &(gf_backward_opts){.retain_graph = 1}));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(!gf_tensor_shares_storage(g2, go));
    CHECK_OK(gf_backward(r, go, NULL));
    CHECK_VALS(g2, DV(2, 4, 6, 8), 4, 0);
    CHECK_VALS(go, DV(1, 2, 3, 4), 4, 0); /* the caller's grad_output is untouched */
    gf_tensor_release(g2);
    gf_tensor_release(go);
    gf_tensor_release(r);
    gf_tensor_release(s2);
    gf_tensor_release(g1);
    gf_tensor_release(s);
    gf_tensor_release(x);
}

static void rule02_grad_set_by_the_user(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    /* A tensor given with set_grad is x.grad: backward adds into it (as
     * PyTorch's `x.grad = t`), so t reads the sum. */
    gf_tensor *t = ag_vec(DV(10, 20), 2);
    CHECK_OK(gf_tensor_set_grad(x, t));
    gf_tensor *y = square_sum(x);
    CHECK_OK(gf_backward(y, NULL, NULL));
    CHECK_VALS(t, DV(12, 24), 2, 0);
    CHECK_GRAD(x, DV(12, 24), 2, 0);
    /* A transposed (non-contiguous) .grad is written through its strides. */
    gf_tensor *m = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *base = ag_t(DV(0, 0, 10, 10), SZ(2, 2), 2);
    gf_tensor *tr = gf_transpose(base, 0, 1); /* [[0, 10], [0, 10]] */
    CHECK_OK(gf_tensor_set_grad(m, tr));
    gf_tensor *ym = square_sum(m);
    CHECK_OK(gf_backward(ym, NULL, NULL));
    CHECK_VALS(tr, DV(2, 14, 6, 18), 4, 0);
    CHECK_VALS(base, DV(2, 6, 14, 18), 4, 0);
    /* An expanded .grad (one element seen twice) cannot be written in
     * place: .grad becomes a new tensor and the expanded one is untouched. */
    gf_tensor *one = ag_t(DV(5), SZ(1), 1);
    gf_tensor *ex = gf_expand(one, SZ(2), 1);
    CHECK_OK(gf_tensor_set_grad(x, ex));
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    CHECK_GRAD(x, DV(7, 9), 2, 0);
    CHECK_VALS(one, DV(5), 1, 0);
    gf_tensor *g = gf_tensor_grad(x);
    CHECK(g != ex && !gf_tensor_shares_storage(g, one));
    gf_tensor_release(g);
    gf_tensor_release(y2);
    gf_tensor_release(ex);
    gf_tensor_release(one);
    gf_tensor_release(ym);
    gf_tensor_release(tr);
    gf_tensor_release(base);
    gf_tensor_release(m);
    gf_tensor_release(y);
    gf_tensor_release(t);
    gf_tensor_release(x);
}

static void rule02_create_graph_then_plain_backward(void) {
    /* A .grad with history (from create_graph) then a plain backward: the
     * plain one adds into that tensor in place, as PyTorch's `grad += new`
     * under no-grad; the values are right either way. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y1 = square_sum(x);
    CHECK_OK(gf_backward(y1, NULL, &(gf_backward_opts){.retain_graph = -1, .create_graph = true}));
    gf_tensor *g1 = gf_tensor_grad(x);
    CHECK(gf_tensor_requires_grad(g1));
    gf_tensor *y2 = square_sum(x);
    CHECK_OK(gf_backward(y2, NULL, NULL));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(g2 == g1);
    CHECK_VALS(g2, DV(4, 8), 2, 0);
    CHECK_OK(gf_tensor_set_grad(x, NULL)); /* break the cycle x -> .grad -> graph -> x */
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    gf_tensor_release(x);
}

int main(void) {
    RUN(rule02_accumulates_into_the_same_tensor);
    RUN(rule02_first_grad_never_aliases_the_engines);
    RUN(rule02_grad_set_by_the_user);
    RUN(rule02_create_graph_then_plain_backward);
    return ag_finish();
}
