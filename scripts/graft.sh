#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# graft.sh — set up, build and run graft on a Debian 12 machine.
#
#   scripts/graft.sh train [options]
#                            install what is missing, build, train the Fashion-MNIST CNN
#                            (examples/fashion_mnist, given the options) on the device
#                            GRAFT_DEVICE names (default: cpu) for TRAIN_EPOCHS epochs
#                            (default 10) with the rate annealed by a cosine over them
#                            (TRAIN_LR_DECAY=G: x G per epoch instead), and print the
#                            test accuracy and the time
#   scripts/graft.sh demo    install, build, train the spiral MLP (a few seconds)
#   scripts/graft.sh test    install what is missing, build, run the whole test suite (CTest)
#   scripts/graft.sh asan    the same suite built with AddressSanitizer + UBSan
#   scripts/graft.sh tsan    the threaded tests built with ThreadSanitizer
#   scripts/graft.sh fuzz    the libFuzzer target (tests/fuzz) built with clang, ASan and
#                            UBSan, run FUZZ_SECONDS (default 120) on each CPU plugin
#   scripts/graft.sh setup   only install what is missing
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores),
# GRAFT_CMAKE_ARGS (more arguments to CMake's configure step, e.g.
# -DGRAFT_CUDA_ARCHITECTURES=80-virtual), GRAFT_SKIP_SETUP=1 to skip the package step, TRAIN_EPOCHS and TRAIN_LR_DECAY for train. FUZZ_SECONDS,
# FUZZ_RUNS, FUZZ_SEED, FUZZ_PLUGINS (default "reference cpu_onednn") and FUZZ_CORPUS (a folder the fuzzer may
# grow; default a copy of tests/fuzz/corpus in the build folder) for the fuzz command.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"

packages=(cmake build-essential pkg-config python3 python3-numpy
          libdnnl-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
          libvulkan-dev mesa-vulkan-drivers glslc spirv-tools vulkan-validationlayers
          libdlpack-dev valgrind clang libclang-rt-14-dev zlib1g-dev dataset-fashion-mnist
          libopenmpi-dev openmpi-bin)

setup() {
    [ "${GRAFT_SKIP_SETUP:-0}" = 1 ] && return 0
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "graft: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The test stages run $jobs test programs at once on as many cores, and each
# program that uses the cpu_onednn plugin starts its own OpenMP team. With
# libgomp's default wait policy a team's idle threads spin for a while at
# every barrier, on the very cores the other program's threads need
# (measured on 2 cores: the 63 cpu_onednn-labelled tests took 52 s with
# `ctest -j2` and 14 s with OMP_WAIT_POLICY=passive). Tests check results,
# not speed, so they wait passively unless the caller chose a policy.
# libgomp reads the variable when it loads: it is set before any test starts.
test_env() { export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"; }

build() { # build <dir> [cmake args...]
    local dir="$1"; shift
    # shellcheck disable=SC2086 # GRAFT_CMAKE_ARGS is a list of arguments
    cmake -S "$here" -B "$dir" -DGRAFT_WERROR=ON "$@" ${GRAFT_CMAKE_ARGS:-}
    cmake --build "$dir" -j "$jobs"
}

cmd="${1:-train}"
case "$cmd" in
setup) setup ;;
train)
    setup
    dir="${BUILD_DIR:-$here/build}"
    build "$dir"
    start=$(date +%s)
    shift
    "$dir/examples/fashion_mnist" --epochs "${TRAIN_EPOCHS:-10}" \
        ${TRAIN_LR_DECAY:+--lr-decay "$TRAIN_LR_DECAY"} "$@"
    echo "graft: trained in $(( $(date +%s) - start )) s (reading the data set included)"
    ;;
demo)
    setup
    dir="${BUILD_DIR:-$here/build}"
    build "$dir"
    "$dir/examples/train_mlp"
    ;;
test)
    setup
    dir="${BUILD_DIR:-$here/build}"
    build "$dir"
    test_env
    ctest --test-dir "$dir" --output-on-failure -j "$jobs"
    ;;
asan)
    setup
    dir="${BUILD_DIR:-$here/build-asan}"
    # The CUDA plugin cannot be built with the sanitizers (nvcc) and cannot
    # run here; the plain build compiles and links it.
    # -O1 (with the debug information and assertions of a Debug build), as
    # the sanitizers' own documentation advises: about twice as fast as -O0
    # under ASan, which keeps this stage's share of CI in bounds.
    build "$dir" -DGRAFT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DGRAFT_WITH_CUDA=OFF
    # The core's every-device programs repeated on the Vulkan and OpenCL
    # plugins (ops.*_vulkan, autograd.*_opencl, ...) run in the plain test
    # stage only: under the sanitizers they check the same core paths the
    # reference and cpu_onednn runs check, while lavapipe's and PoCL's own
    # (uninstrumented) kernels take most of their time. The plugins' own
    # tests (vulkan.*, opencl.*) run here.
    test_env
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "$dir" --output-on-failure -j "$jobs" -LE "nosan" -E "_(vulkan|opencl)$"
    ;;
tsan)
    setup
    dir="${BUILD_DIR:-$here/build-tsan}"
    # Only the threaded core tests run here: no device plugins but the reference,
    # and only the programs the tests labelled `threads` run (CTest lists them
    # once configured; each program's file name is its target's name). If
    # none is found, everything is built.
    cmake -S "$here" -B "$dir" -DGRAFT_WERROR=ON -DGRAFT_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug \
        -DGRAFT_WITH_CUDA=OFF -DGRAFT_WITH_ONEDNN=OFF -DGRAFT_WITH_OPENCL=OFF -DGRAFT_WITH_VULKAN=OFF
    known="$(cmake --build "$dir" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')"
    targets=()
    for f in $(find "$dir" -name CTestTestfile.cmake); do
        for name in $(grep -E '^set_tests_properties\(.*LABELS "([^"]*;)?threads(;[^"]*)?"' "$f" |
                      sed -E 's/^set_tests_properties\(\[=\[([^]]*)\]=\].*/\1/'); do
            for t in $(grep -F "add_test([=[$name]=]" "$f" | grep -o "$dir/[^\" ]*" | sed 's#.*/##'); do
                grep -qx "$t" <<<"$known" && targets+=("$t")
            done
        done
    done
    if [ "${#targets[@]}" -gt 0 ]; then
        cmake --build "$dir" -j "$jobs" --target graft_plugin_reference "${targets[@]}"
    else
        cmake --build "$dir" -j "$jobs"
    fi
    test_env
    TSAN_OPTIONS=halt_on_error=1 ctest --test-dir "$dir" --output-on-failure -j "$jobs" -L threads
    ;;
fuzz)
    setup
    dir="${BUILD_DIR:-$here/build-fuzz}"
    # Only what the fuzzer runs: the target and the two CPU plugins.
    CC=clang cmake -S "$here" -B "$dir" -DGRAFT_WERROR=ON -DGRAFT_SANITIZE=address,undefined \
        -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DGRAFT_FUZZ=ON -DGRAFT_WITH_CUDA=OFF -DGRAFT_WITH_OPENCL=OFF \
        -DGRAFT_WITH_VULKAN=OFF
    cmake --build "$dir" -j "$jobs" --target fuzz_api graft_plugin_reference graft_plugin_cpu_onednn
    corpus="${FUZZ_CORPUS:-$dir/fuzz-corpus}"
    mkdir -p "$corpus"
    cp -n "$here"/tests/fuzz/corpus/* "$corpus"/
    for plugin in ${FUZZ_PLUGINS:-reference cpu_onednn}; do
        echo "graft: fuzzing on $plugin for ${FUZZ_SECONDS:-120} s or ${FUZZ_RUNS:-250000} runs"
        # A fixed seed and a run cap make CI's run the same sequence of inputs
        # on every machine (what passed here passes there); FUZZ_SEED=0 (a
        # random seed) and larger FUZZ_RUNS / FUZZ_SECONDS explore further.
        # allocator_may_return_null: a huge allocation graft must refuse is an
        # error path, not a finding; -malloc_limit_mb still flags any single
        # allocation above 512 MiB, which the target never needs. One OpenMP
        # thread: the tensors are tiny, and LeakSanitizer's stop-the-world
        # pass fails now and then with a pool of idle OpenMP threads.
        #
        # LeakSanitizer's tracer (the ptrace-based stop-the-world of a leak
        # check) now and then dies with SIGSEGV on a loaded machine before any
        # input is at fault ("LeakSanitizer has encountered a fatal error"):
        # a failure of the tool, not a finding. Only that case is run again,
        # with the same seed; a real finding (an ASan/UBSan report, a leak, a
        # timeout) fails at once, and would repeat under the seed. libFuzzer
        # runs the tracer after every input whose mallocs and frees do not
        # balance, thousands of times a run, and it has failed on two
        # attempts in a row: the third attempt turns those per-input checks
        # off (-detect_leaks=0) and keeps LeakSanitizer's one check at exit,
        # which still reports every block an input leaked (unreachable by
        # then), only without the input that leaked it.
        log="$dir/fuzz-$plugin.log"
        for attempt in 1 2 3; do
            rc=0
            per_input=1
            [ "$attempt" -eq 3 ] && per_input=0
            (cd "$dir" && GRAFT_PLUGINS="$plugin" GRAFT_DEVICE=cpu OMP_NUM_THREADS=1 \
                ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                tests/fuzz/fuzz_api -detect_leaks="$per_input" \
                -max_total_time="${FUZZ_SECONDS:-120}" -timeout=10 \
                -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-250000}" \
                -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=512 -print_final_stats=1 \
                "$corpus") 2>&1 | tee "$log" || rc=$?
            [ "$rc" -eq 0 ] && break
            if [ "$attempt" -lt 3 ] && grep -q "LeakSanitizer has encountered a fatal error" "$log" &&
                ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error:|ERROR: libFuzzer" "$log"; then
                echo "graft: LeakSanitizer's tracer failed (not a finding); fuzzing on $plugin again (attempt $((attempt + 1)) of 3)"
                continue
            fi
            exit "$rc"
        done
    done
    ;;
*)
    echo "usage: $0 train|demo|test|asan|tsan|fuzz|setup" >&2
    exit 2
    ;;
esac
