/* SPDX-License-Identifier: BSD-3-Clause */
/* graft.h — the public API of graft, a tensor library with reverse-mode
 * autograd whose devices are plugins loaded at run time. */
#ifndef GRAFT_H
#define GRAFT_H

#include "graft/types.h"
#include "graft/device.h"
#include "graft/tensor.h"
#include "graft/ops.h"
#include "graft/shape.h"
#include "graft/nn.h"
#include "graft/layers.h"
#include "graft/ops_extra.h"
#include "graft/autograd.h"
#include "graft/schedule.h"
#include "graft/interop.h"
#include "graft/profiler.h"
#include "graft/complex.h"
#include "graft/fft.h"
#include "graft/module.h"
#include "graft/forward_ad.h"
#include "graft/graph.h"
#include "graft/amp.h"

#endif
