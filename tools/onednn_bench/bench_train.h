/* bench_train.h — the training-step workloads of graft-onednn-bench. */
#ifndef GRAFT_ONEDNN_BENCH_TRAIN_H
#define GRAFT_ONEDNN_BENCH_TRAIN_H

#include <math.h>
#include <stdbool.h>

#include "graft.h"

typedef struct train_result {
    double median, min;          /* seconds per step */
    double cpu;                   /* median CPU seconds per step, every thread summed: on a
                                   * busy machine, the figure that other load moves least */
    double first_loss, last_loss; /* the loss falls when the step is right */
    double faults_per_step;       /* minor page faults: memory the step touched fresh */
} train_result;

/* Times reps steps (after two warm-up steps) of the MLP or the CNN on dev.
 * Returns 0 (message printed) on a graft error. */
int bench_train_step(gf_device *dev, bool cnn, int reps, train_result *out);

#endif
