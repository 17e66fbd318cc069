/* SPDX-License-Identifier: BSD-3-Clause */
/* stub_messages.h — texts the stub plugin attaches to the failures it
 * injects, shared with the tests that look for them in graft's errors. */
#ifndef GRAFT_TESTS_STUB_MESSAGES_H
#define GRAFT_TESTS_STUB_MESSAGES_H

#define STUB_NAME "stub"
#define STUB_DEVICE_TYPE "stub"

#define STUB_MSG_REFUSE "stub refuses negotiation: this build serves ABI 7.x only"
#define STUB_MSG_INIT_FAIL "stub init failed on purpose: no stub hardware present"
/* Quote, backslash and tab on purpose: graft-info --json must escape them. */
#define STUB_MSG_ZERO_DEVICES "no \"stub\" devices\there (C:\\stub): set STUB_DEVICES > 0"
#define STUB_MSG_OOM "stub allocation failure injected (STUB_FAIL_ALLOC_AT)"
#define STUB_MSG_KERNEL "stub kernel failure injected (STUB_FAIL_OP)"
#define STUB_MSG_UNSUPPORTED "stub implements only FILL, COPY and ADD on f32"

/* Lines of the call log (env STUB_LOG) that reveal a broken contract. */
#define STUB_LOG_VIOLATION "VIOLATION"

#endif
