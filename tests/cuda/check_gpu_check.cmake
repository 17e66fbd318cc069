# SPDX-License-Identifier: BSD-3-Clause
# check_gpu_check.cmake — scripts/gpu-check.sh rehearsed without a GPU, on the
# build under test (--no-build), in a few seconds:
#  1. the steps that need a GPU report it as their reason, the summary and
#     the log archive are written, and the exit status is 0;
#  2. a budget too small for any step: each one says "out of budget";
#  3. no OUTDIR: status 2.
#   -DBASH=<bash> -DSCRIPT=<gpu-check.sh> -DBUILD=<build dir> -DWORK=<scratch dir>
file(REMOVE_RECURSE "${WORK}")

function(run_script outdir)
  execute_process(COMMAND "${BASH}" "${SCRIPT}" "${outdir}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect_line summary regex)
  if(NOT summary MATCHES "${regex}")
    message(FATAL_ERROR "summary.txt has no line matching '${regex}':\n${summary}")
  endif()
endfunction()

# 1. The rehearsal (the steps that run ctest, the checker or graft-bench are
#    left out: they take longer, and on a GPU machine the checker would run
#    in full).
run_script("${WORK}/one" --no-gpu --no-build --build-dir "${BUILD}" --budget 60
  --skip cuda,plugin-check,cross-device,bench)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpu-check.sh --no-gpu exited with ${rc}:\n${out}")
endif()
file(READ "${WORK}/one/summary.txt" s)
expect_line("${s}" "\ngpu: none \\(--no-gpu")
expect_line("${s}" "\n\\[build\\] +pass ")
expect_line("${s}" "\n\\[cuda\\] +skipped +0s +--skip")
expect_line("${s}" "\n\\[examples\\] +skipped .*no NVIDIA GPU")
expect_line("${s}" "\n\\[memcheck\\] +skipped .*(no NVIDIA GPU|not built|compute-sanitizer)")
expect_line("${s}" "\n\\[vulkan\\] +skipped .*no NVIDIA GPU")
expect_line("${s}" "\n\\[opencl\\] +skipped .*no NVIDIA GPU")
expect_line("${s}" "\ntotal: [0-9]+ s of a 60 s budget; no step failed")
if(s MATCHES "FAIL")
  message(FATAL_ERROR "a step failed in the rehearsal:\n${s}")
endif()
if(NOT EXISTS "${WORK}/one/logs.tar.gz" OR EXISTS "${WORK}/one/logs")
  message(FATAL_ERROR "expected logs.tar.gz and no logs/ folder in ${WORK}/one")
endif()

# 2. Ten seconds: nothing fits.
# What the build step builds: every program a cuda-labelled test runs (the
# every-device suites included), not a list kept by hand.
execute_process(COMMAND "${BASH}" "${SCRIPT}" --list-targets "${BUILD}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE targets ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpu-check.sh --list-targets exited with ${rc}: ${err}")
endif()
foreach(t graft graft-plugin-check graft-bench)
  if(NOT targets MATCHES "(^|\n)${t}\n")
    message(FATAL_ERROR "gpu-check.sh --list-targets lacks ${t}:\n${targets}")
  endif()
endforeach()
if(targets MATCHES "(^|\n)graft_plugin_cuda\n")
  foreach(t ops_test_fft ops_test_complex autograd_test_graph_replay cuda_test_cuda_xd_complex
      cuda_test_cuda_xd_grads cuda_test_load)
    if(NOT targets MATCHES "(^|\n)${t}\n")
      message(FATAL_ERROR "gpu-check.sh --list-targets lacks ${t}, which a cuda test runs:\n${targets}")
    endif()
  endforeach()
endif()

run_script("${WORK}/two" --no-gpu --no-build --build-dir "${BUILD}" --budget 10)
file(READ "${WORK}/two/summary.txt" s)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpu-check.sh --budget 10 exited with ${rc}:\n${s}")
endif()
expect_line("${s}" "\n\\[cuda\\] +skipped .*out of budget \\(needs 20 s, [0-9-]+ s left\\)")
expect_line("${s}" "\n\\[cross-device\\] +skipped .*out of budget")

# 3. A bad command line.
run_script("" --no-gpu)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "gpu-check.sh without OUTDIR exited with ${rc}, expected 2:\n${out}")
endif()
