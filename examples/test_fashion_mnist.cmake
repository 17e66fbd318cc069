# SPDX-License-Identifier: BSD-3-Clause
# test_fashion_mnist.cmake — the checks of examples/fashion_mnist that take
# more than one run (cmake -P, with -DEXE=<fashion_mnist> -DMODE=<mode>
# -DWORK=<scratch directory>):
#   resume   2 epochs straight and 1 epoch + --resume for the 2nd write the
#            same checkpoint, byte for byte; --eval of it prints the test
#            accuracy the training run printed last
#   missing  without the data set: exit status 2 and a message naming the
#            package to install
#   capture  2 epochs eagerly and with --capture (the step captured after a
#            warm-up step, replayed for every later full batch; each epoch's
#            last, shorter batch eager): every step's loss (TRAIN_LOSS_LOG,
#            9 digits) and the final test accuracy are the same
# Without the data set, `resume` prints the example's own message, which the
# test's SKIP_REGULAR_EXPRESSION turns into a skip.
cmake_minimum_required(VERSION 3.20)

function(run out_var)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message("$ fashion_mnist ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    if(err MATCHES "data set is not there")
      return() # reported above: the test is skipped
    endif()
    message(FATAL_ERROR "fashion_mnist ${ARGN} failed with status ${rc}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "resume")
  file(REMOVE_RECURSE "${WORK}")
  file(MAKE_DIRECTORY "${WORK}")
  # Small enough to stay short; 2 epochs of 8 batches exercise the shuffle,
  # dropout and Adam's bias correction across the resume.
  set(small --limit 1000 --test-limit 1000 --seed 7)
  run(straight ${small} --epochs 2 --save "${WORK}/straight.safetensors")
  if(NOT straight)
    return()
  endif()
  run(first ${small} --epochs 1 --save "${WORK}/first.safetensors")
  run(resumed ${small} --epochs 2 --resume "${WORK}/first.safetensors"
      --save "${WORK}/resumed.safetensors")
  file(SHA256 "${WORK}/straight.safetensors" a)
  file(SHA256 "${WORK}/resumed.safetensors" b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "2 epochs straight and 1 + 1 resumed wrote different checkpoints")
  endif()
  string(REGEX MATCH "final test accuracy ([0-9.]+)" m1 "${straight}")
  set(trained "${CMAKE_MATCH_1}")
  string(REGEX MATCH "final test accuracy ([0-9.]+)" m2 "${resumed}")
  if(NOT m1 OR NOT CMAKE_MATCH_1 STREQUAL trained)
    message(FATAL_ERROR "resumed run's accuracy '${CMAKE_MATCH_1}' differs from '${trained}'")
  endif()
  run(evaluated --test-limit 1000 --eval "${WORK}/resumed.safetensors")
  string(REGEX MATCH "test accuracy ([0-9.]+)" m3 "${evaluated}")
  if(NOT m3 OR NOT CMAKE_MATCH_1 STREQUAL trained)
    message(FATAL_ERROR "--eval printed '${CMAKE_MATCH_1}', training printed '${trained}'")
  endif()
  file(REMOVE_RECURSE "${WORK}")
  message("resume and eval: ok (test accuracy ${trained})")
elseif(MODE STREQUAL "missing")
  execute_process(COMMAND "${EXE}" --data "${WORK}/no-such-dir" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 2 OR NOT err MATCHES "dataset-fashion-mnist")
    message(FATAL_ERROR "expected status 2 and the package's name, got status ${rc}")
  endif()
elseif(MODE STREQUAL "capture")
  file(REMOVE_RECURSE "${WORK}")
  file(MAKE_DIRECTORY "${WORK}")
  set(small --limit 1000 --test-limit 1000 --seed 7 --epochs 2)
  set(ENV{TRAIN_LOSS_LOG} "${WORK}/eager.txt")
  run(eager ${small})
  if(NOT eager)
    return()
  endif()
  set(ENV{TRAIN_LOSS_LOG} "${WORK}/captured.txt")
  run(replayed ${small} --capture)
  file(READ "${WORK}/eager.txt" a)
  file(READ "${WORK}/captured.txt" b)
  string(REGEX MATCHALL "\n" lines "${a}")
  list(LENGTH lines n)
  if(n LESS 16 OR NOT a STREQUAL b)
    message(FATAL_ERROR "the losses differ (or are missing):\neager:\n${a}\ncaptured:\n${b}")
  endif()
  string(REGEX MATCH "final test accuracy ([0-9.]+)" m1 "${eager}")
  set(acc "${CMAKE_MATCH_1}")
  string(REGEX MATCH "final test accuracy ([0-9.]+)" m2 "${replayed}")
  if(NOT m1 OR NOT CMAKE_MATCH_1 STREQUAL acc OR NOT replayed MATCHES "captured and replayed")
    message(FATAL_ERROR "--capture's accuracy '${CMAKE_MATCH_1}' differs from '${acc}'")
  endif()
  file(REMOVE_RECURSE "${WORK}")
  message("capture: ${n} steps with the same losses, test accuracy ${acc}")
else()
  message(FATAL_ERROR "MODE must be resume, missing or capture, not '${MODE}'")
endif()
