#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes PyTorch checkpoints as a PyTorch user saves them, and what PyTorch
computes after loading them, for graft to load and match:

  tests/autograd/data/resnet_model.safetensors   a resnet-style CNN's
      state_dict (gen_resnet.py's Net, f64), saved with
      safetensors.torch.save_file after three Adam steps
  tests/autograd/data/resnet_adam.safetensors    that Adam's
      state_dict()['state'] flattened to "state.<i>.<key>" (step as PyTorch
      keeps it: an f32 0-dim tensor), with state_dict()['param_groups'] as
      JSON in the file's metadata under "param_groups"
  tests/autograd/data/gpt_model.safetensors, gpt_adam.safetensors
      the same for a small GPT (f32, trained with AdamW): nn.Embedding + learned positions, an
      nn.TransformerEncoder of two pre-norm GELU layers under a causal mask
      with a final nn.LayerNorm, an nn.Linear head, trained as a
      next-token model
  tests/autograd/checkpoint_expected.h    the inputs, each model's output
      right after loading, and, after one more training step (forward in
      training mode, loss, backward, Adam step), the output and two
      parameters.

tests/autograd/test_module_resnet.c and test_module_transformer.c build the
same models from graft's modules, load the files by name and check those
values. The optimisers use hyperparameters other than the defaults (betas,
eps, weight decay; AdamW for the GPT) and the tests create graft's Adam with
the defaults: what they step with comes from the file's param_groups.

    python3 tools/expected/gen_checkpoints.py   (from the repository root)
"""
import json
import os
import sys

import torch
import torch.nn as nn
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_resnet import Net  # noqa: E402  (the resnet-style model of that script)

OUT = "tests/autograd/data"
V, D, HEADS, FF, T, B = 12, 16, 2, 32, 6, 3


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.1)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(D, V)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.head(self.encoder(self.tok(x) + self.pos, mask=mask))


def save_optimizer(opt, path):
    """state_dict()['state'] as "state.<i>.<key>" tensors, param_groups as
    JSON metadata: a flattened torch optimizer checkpoint."""
    sd = opt.state_dict()
    out = {}
    for i, st in sd["state"].items():
        for k, v in st.items():
            out["state.%d.%s" % (i, k)] = v.detach().clone().contiguous()
    save_file(out, path, metadata={"param_groups": json.dumps(sd["param_groups"])})


def arr(t):
    return ", ".join(repr(float(v)) for v in t.detach().flatten())


def c_name(s):
    return s.replace(".", "_")


def resnet(out):
    torch.manual_seed(1)
    net = Net().double()
    opt = torch.optim.Adam(net.parameters(), lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                           weight_decay=1e-3)
    w = torch.linspace(-1, 1, 2 * 3, dtype=torch.float64).reshape(2, 3)
    for _ in range(3):
        opt.zero_grad()
        (net(torch.randn(2, 3, 8, 8, dtype=torch.float64)) * w).sum().backward()
        opt.step()
    save_file({k: v.contiguous() for k, v in net.state_dict().items()},
              os.path.join(OUT, "resnet_model.safetensors"))
    save_optimizer(opt, os.path.join(OUT, "resnet_adam.safetensors"))
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    net.eval()
    with torch.no_grad():
        y0 = net(x)
    net.train()
    opt.zero_grad()
    (net(x) * w).sum().backward()
    opt.step()
    net.eval()
    with torch.no_grad():
        y1 = net(x)
    out.append("static const double ck_rn_x[] = {%s};" % arr(x))
    out.append("static const double ck_rn_w[] = {%s};" % arr(w))
    out.append("static const double ck_rn_y_loaded[] = {%s};" % arr(y0))
    out.append("static const double ck_rn_y_stepped[] = {%s};" % arr(y1))
    out.append("static const double ck_rn_conv1_weight[] = {%s};" % arr(net.conv1.weight))
    out.append("static const double ck_rn_fc_bias[] = {%s};" % arr(net.fc.bias))


def gpt(out):
    torch.manual_seed(2)
    net = GPT()
    opt = torch.optim.AdamW(net.parameters(), lr=0.01, betas=(0.85, 0.98), weight_decay=0.05)
    seqs = torch.randint(0, V, (4, B, T + 1))
    for s in seqs[:3]:
        opt.zero_grad()
        logits = net(s[:, :T])
        nn.functional.cross_entropy(logits.reshape(-1, V), s[:, 1:].reshape(-1)).backward()
        opt.step()
    save_file({k: v.contiguous() for k, v in net.state_dict().items()},
              os.path.join(OUT, "gpt_model.safetensors"))
    save_optimizer(opt, os.path.join(OUT, "gpt_adam.safetensors"))
    s = seqs[3]
    net.eval()
    with torch.no_grad():
        y0 = net(s[:, :T])
    net.train()
    opt.zero_grad()
    loss = nn.functional.cross_entropy(net(s[:, :T]).reshape(-1, V), s[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    net.eval()
    with torch.no_grad():
        y1 = net(s[:, :T])
    out.append("#define CK_GPT_V %d\n#define CK_GPT_D %d\n#define CK_GPT_HEADS %d\n"
               "#define CK_GPT_FF %d\n#define CK_GPT_T %d\n#define CK_GPT_B %d" %
               (V, D, HEADS, FF, T, B))
    out.append("static const int64_t ck_gpt_x[] = {%s};" %
               ", ".join(str(int(v)) for v in s[:, :T].flatten()))
    out.append("static const int64_t ck_gpt_y[] = {%s};" %
               ", ".join(str(int(v)) for v in s[:, 1:].flatten()))
    out.append("static const double ck_gpt_loss = %r;" % float(loss.detach()))
    out.append("static const double ck_gpt_logits_loaded[] = {%s};" % arr(y0))
    out.append("static const double ck_gpt_logits_stepped[] = {%s};" % arr(y1))
    out.append("static const double ck_gpt_head_weight[] = {%s};" % arr(net.head.weight))
    out.append("static const double ck_gpt_pos[] = {%s};" % arr(net.pos))


def main():
    os.makedirs(OUT, exist_ok=True)
    out = ["/* SPDX-License-Identifier: BSD-3-Clause */",
           "/* checkpoint_expected.h — generated by tools/expected/gen_checkpoints.py with "
           "torch %s: do not edit.\n * What PyTorch computes after loading the checkpoints "
           "of tests/autograd/data/. */" % torch.__version__,
           "#ifndef GRAFT_TESTS_CHECKPOINT_EXPECTED_H", "#define GRAFT_TESTS_CHECKPOINT_EXPECTED_H",
           "#include <stdint.h>"]
    resnet(out)
    gpt(out)
    out.append("#endif")
    with open("tests/autograd/checkpoint_expected.h", "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
