#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gpu-check.sh — graft's GPU plugins checked on an NVIDIA machine in one
# command, inside a time budget.
#
#   scripts/gpu-check.sh OUTDIR [--no-gpu] [--budget SECONDS] [--build-dir DIR]
#                               [--no-build] [--extras DIR] [--jobs N] [--skip STEPS]
#
# Steps, in order of value; each runs under its own timeout, and one that the
# budget left cannot hold is reported "skipped: out of budget":
#   build         Release, CUDA architecture 90 only, no oneDNN, ninja when
#                 present, every core; only the targets the steps below run:
#                 every program a test labelled cuda runs, the plugins, the
#                 tools and the examples (`gpu-check.sh --list-targets BUILD`
#                 prints them for a configured build folder).
#                 A build folder already configured for this source tree
#                 (--build-dir) is brought up to date instead (a no-op when it
#                 is): a rerun on the same machine costs seconds.
#   cuda          ctest -L cuda: the CUDA plugin's own suites (every op on
#                 cuda:0 against the reference plugin, with and without cuDNN)
#   plugin-check  graft-plugin-check (full run) on libgraft-cuda.so
#   cross-device  ctest of the suites registered for every device (label cuda
#                 plus ops or autograd), then the examples with
#                 GRAFT_DEVICE=cuda:0
#   memcheck      compute-sanitizer --tool memcheck on each CUDA test program
#   bench         tools/bench_gpu_torch.py: graft-bench on cuda:0 against
#                 PyTorch on the same GPU (matmul 1024/4096 without TF32, add,
#                 dispatch per op, conv2d forward and backward, MLP and CNN
#                 steps, and the complex rows: cmatmul, cmul, fft, rfft, stft)
#   vulkan-opencl the Vulkan and OpenCL plugins on the NVIDIA driver, where a
#                 plugin and its loader and NVIDIA's driver file for it are
#                 found: graft-plugin-check --quick on each, then matmul 4096 as
#                 a fraction of cuBLAS and add 16M as a fraction of a
#                 device-to-device copy
#
# OUTDIR gets summary.txt (written as the steps end: pass or FAIL per suite,
# checker counts, the sanitizer's verdict, the comparison table, the tail of
# each failing log) and logs.tar.gz (every step's log; OUTDIR/logs/ until the
# end, and kept with --keep-logs). Few files on purpose: what a remote run
# hands back may be limited in number.
#
# Options:
#   --no-gpu         rehearsal on a machine without an NVIDIA GPU: the build
#                    step and the steps that need no GPU run, the others say
#                    why they are skipped (also what happens, with the reason,
#                    when nvidia-smi finds no GPU)
#   --budget S       total seconds (default 420, or GPU_CHECK_BUDGET): a second
#                    run still fits in a 15-minute window
#   --build-dir DIR  the build folder (default build-gpu in the source tree, or
#                    GRAFT_GPU_BUILD_DIR). One configured for another source
#                    path (carried from another machine) cannot be reused:
#                    configure afresh there.
#   --extras DIR     prebuilt plugins (libgraft-vulkan.so, libgraft-opencl.so,
#                    where the GPU machine lacks the Vulkan headers and glslc)
#                    and loader .debs (libvulkan1, ocl-icd-libopencl1,
#                    libclblast1) for the vulkan-opencl step. Default
#                    .gpu-extras in the source tree when it exists, or
#                    GRAFT_GPU_EXTRAS. The .debs are unpacked inside DIR, never
#                    into /. `scripts/gpu-check.sh --prepare-extras DIR
#                    [BUILD]` fills DIR here (plugins from BUILD, default
#                    build; the .debs with apt-get download).
#   --no-build       use --build-dir's programs as they are (no configure, no build)
#   --jobs N         build jobs (default: every core)
#   --skip STEPS     comma-separated steps not to run: cuda, plugin-check,
#                    cross-device, examples, memcheck, bench, vulkan-opencl
#   --keep-logs      leave OUTDIR/logs/ as well as logs.tar.gz
#
# Exit status: 0 when no step failed (skipped steps are not failures), 1 when
# one failed, 2 for a bad command line.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

die_usage() {
    sed -n '4,5p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
    [ $# -gt 0 ] && echo "gpu-check.sh: $*" >&2
    exit 2
}

# ---------------------------------------------------------------- targets
# What the steps run: every program a test labelled cuda runs (the suites
# registered for every device grow with each round: a list kept by hand fell
# behind, and a test whose program is not built fails as "Not Run"), plus
# the plugins, tools and examples below. A target the tree does not define
# is left out. Needs a configured build folder.
want_targets=(graft graft_plugin_reference graft_plugin_cuda graft_plugin_vulkan graft_plugin_opencl
    graft-plugin-check graft-bench graft-info
    train_mlp train_cnn custom_function hessian_vector transformer autoencoder)

build_targets() {
    local b="$1" have t
    have="$(cmake --build "$b" --target help 2>/dev/null)"
    {
        printf '%s\n' "${want_targets[@]}"
        # a test's program is its target: the file name of its command
        (cd "$b" && ctest -L cuda -N -V 2>/dev/null) |
            sed -n 's/^[0-9]*: Test command: \([^ ]*\).*/\1/p' | sed 's|.*/||'
    } | awk '!seen[$0]++' | while read -r t; do
        grep -qE "(^|[ .:])$t([ :]|$)" <<<"$have" && echo "$t"
    done
}

# --list-targets BUILD: what the build step would build there, one a line.
if [ "${1:-}" = "--list-targets" ]; then
    b="${2:?usage: gpu-check.sh --list-targets BUILD}"
    [ -f "$b/CMakeCache.txt" ] || { echo "gpu-check.sh: $b is not a configured build folder" >&2; exit 2; }
    build_targets "$b"
    exit 0
fi

# ---------------------------------------------------------------- --prepare-extras
if [ "${1:-}" = "--prepare-extras" ]; then
    dir="${2:?usage: gpu-check.sh --prepare-extras DIR [BUILD]}"
    build="${3:-$here/build}"
    mkdir -p "$dir/plugins" "$dir/debs"
    for p in vulkan opencl; do
        if [ -f "$build/plugins/libgraft-$p.so" ]; then
            cp "$build/plugins/libgraft-$p.so" "$dir/plugins/"
        else
            echo "gpu-check.sh: $build/plugins/libgraft-$p.so is not built" >&2
        fi
    done
    (cd "$dir/debs" && apt-get download libvulkan1 ocl-icd-libopencl1 libclblast1) ||
        echo "gpu-check.sh: apt-get download failed; the step will look for system loaders" >&2
    du -sh "$dir"
    exit 0
fi

# ---------------------------------------------------------------- arguments
out=""
no_gpu=0
budget="${GPU_CHECK_BUDGET:-420}"
build="${GRAFT_GPU_BUILD_DIR:-$here/build-gpu}"
extras="${GRAFT_GPU_EXTRAS:-$here/.gpu-extras}"
jobs="$(nproc)"
keep_logs=0
no_build=0
skip=","
while [ $# -gt 0 ]; do
    case "$1" in
    --no-gpu) no_gpu=1 ;;
    --budget) budget="${2:-}"; shift ;;
    --build-dir) build="${2:-}"; shift ;;
    --extras) extras="${2:-}"; shift ;;
    --jobs) jobs="${2:-}"; shift ;;
    --keep-logs) keep_logs=1 ;;
    --no-build) no_build=1 ;;
    --skip) skip=",${2:-},"; shift ;;
    -h|--help) sed -n '2,67p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die_usage "unknown option $1" ;;
    *) [ -z "$out" ] || die_usage "one OUTDIR only"; out="$1" ;;
    esac
    shift
done
[ -n "$out" ] || die_usage "OUTDIR is missing"
[[ "$budget" =~ ^[0-9]+$ ]] && [ "$budget" -ge 10 ] || die_usage "--budget: whole seconds, at least 10"
[[ "$jobs" =~ ^[0-9]+$ ]] && [ "$jobs" -ge 1 ] || die_usage "--jobs: a positive number"
[ -n "$build" ] || die_usage "--build-dir: a folder"
mkdir -p "$out/logs" || exit 2
out="$(cd "$out" && pwd)"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
logs="$out/logs"
summary="$out/summary.txt"

# ---------------------------------------------------------------- time
t0=$(date +%s)
reserve=8 # seconds kept for the summary and the log archive
now() { date +%s; }
elapsed() { echo $(( $(now) - t0 )); }
left() { echo $(( budget - $(elapsed) - reserve )); }
step_end=0
# Seconds until the current step's deadline (at least 1).
tmo() { local s=$(( step_end - $(now) )); [ "$s" -lt 1 ] && s=1; echo "$s"; }
# t_run LOG CMD...: CMD under the step's remaining time, output appended to LOG.
t_run() {
    local log="$1"; shift
    echo "+ $*" >>"$log"
    timeout -k 5 "$(tmo)" "$@" >>"$log" 2>&1
}

# ---------------------------------------------------------------- summary
failed=0
say() { printf '%s\n' "$*" | tee -a "$summary"; }
# verdict STEP STATUS DETAIL: one line per step.
verdict() {
    local step="$1" status="$2"; shift 2
    printf '%-14s %-8s %4ss  %s\n' "[$step]" "$status" "$step_took" "$*" | tee -a "$summary"
    [ "$status" = FAIL ] && failed=1
    return 0
}
# tail_of LOG: the end of a failing log, indented, into the summary.
tail_of() {
    [ -f "$1" ] || return 0
    echo "      --- last lines of ${1##*/}" >>"$summary"
    tail -n "${2:-15}" "$1" | cut -c1-200 | sed 's/^/      /' >>"$summary"
}

finish() {
    trap - INT TERM
    say ""
    say "total: $(elapsed) s of a $budget s budget; $([ $failed = 0 ] && echo 'no step failed' || echo 'a step FAILED')"
    if [ -d "$logs" ]; then
        tar -C "$out" -czf "$out/logs.tar.gz" logs 2>/dev/null
        [ "$keep_logs" = 1 ] || rm -rf "$logs"
    fi
    exit "$failed"
}
trap 'say "interrupted after $(elapsed) s"; failed=1; finish' INT TERM

# step NAME MIN CAP: 0 when the step may start (step_end set), else reports
# it skipped. MIN is what the step needs to be worth starting, CAP its most.
step_took=0
step_t0=0
step() {
    local name="$1" min="$2" cap="$3" l
    l=$(left)
    if [ "$l" -lt "$min" ]; then
        step_took=0
        verdict "$name" skipped "out of budget (needs ${min} s, ${l} s left)"
        return 1
    fi
    [ "$cap" -gt "$l" ] && cap="$l"
    step_t0=$(now)
    step_end=$(( step_t0 + cap ))
    echo "== $name: up to $cap s" >&2
    return 0
}
took() { step_took=$(( $(now) - step_t0 )); }
# unwanted NAME: 0 (and reported) when --skip names the step.
unwanted() {
    case "$skip" in *",$1,"*) step_took=0; verdict "$1" skipped "--skip"; return 0 ;; esac
    return 1
}

# ---------------------------------------------------------------- the machine
: >"$summary"
say "graft GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?'), budget $budget s"
gpu=""
gpu_why=""
if [ "$no_gpu" = 1 ]; then
    gpu_why="--no-gpu (rehearsal)"
elif ! command -v nvidia-smi >/dev/null; then
    gpu_why="no nvidia-smi on PATH"
else
    gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
    if ! nvidia-smi -L >/dev/null 2>&1 || [ -z "$gpu" ]; then
        gpu_why="nvidia-smi finds no GPU: $gpu"
        gpu=""
    fi
fi
say "gpu: ${gpu:-none ($gpu_why)}"
nvcc_v="$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
py="$(command -v python3 || true)"
torch_v="$([ -n "$py" ] && "$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none)"
gen=""
command -v ninja >/dev/null && gen="-G Ninja"
say "tools: nvcc ${nvcc_v:-none}, $(cmake --version | head -n 1), ${gen:+ninja, }compute-sanitizer ${cs:-none}, torch $torch_v, $jobs jobs"
say ""
export CTEST_OUTPUT_ON_FAILURE=1

# ---------------------------------------------------------------- build
# cuDNN: the toolkit's, else the one PyTorch's wheels bring (nvidia/cudnn).
cudnn_args=()
cudnn_lib=""
if ! ls /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h >/dev/null 2>&1 && [ -n "$py" ]; then
    d="$("$py" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
    if [ -n "$d" ] && [ -f "$d/include/cudnn.h" ] && ls "$d"/lib/libcudnn.so* >/dev/null 2>&1; then
        cudnn_lib="$d/lib"
        cudnn_args=("-DGRAFT_CUDNN_INCLUDE_DIR=$d/include"
            "-DGRAFT_CUDNN_LIBRARY=$(ls "$d"/lib/libcudnn.so* | head -n 1)")
        export LD_LIBRARY_PATH="$cudnn_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi

build_ok=0
if [ "$no_build" = 1 ]; then
    step_took=0
    if [ -x "$build/tools/graft-plugin-check" ] || [ -f "$build/CMakeCache.txt" ]; then
        build_ok=1
        verdict build pass "--no-build: $build as it is"
    else
        verdict build FAIL "--no-build: $build holds no build"
    fi
elif step build 20 $(( budget * 2 / 3 )); then
    log="$logs/01-build.log"
    src_of_cache="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
    how="reused $build"
    if [ -n "$src_of_cache" ] && [ "$src_of_cache" != "$here" ]; then
        took
        verdict build FAIL "$build was configured for $src_of_cache, not $here: pass another --build-dir"
    else
        rc=0
        if [ -z "$src_of_cache" ]; then
            how="configured $build"
            # shellcheck disable=SC2086
            t_run "$log" cmake -S "$here" -B "$build" $gen -DCMAKE_BUILD_TYPE=Release \
                -DCMAKE_CUDA_ARCHITECTURES=90 -DGRAFT_CUDA_ARCHITECTURES=90 \
                -DGRAFT_WITH_ONEDNN=OFF "${cudnn_args[@]}" || rc=$?
        fi
        if [ "$rc" = 0 ]; then
            targets=()
            while read -r t; do targets+=("$t"); done < <(build_targets "$build")
            t_run "$log" cmake --build "$build" -j "$jobs" --target "${targets[@]}" || rc=$?
        fi
        took
        # The configure summary's plugin lines, shortened; cuda's whole.
        plugins="$(sed -nE 's/^-- +plugin +([a-z_]+) *: *(built|not built).*/\1 \2/p' "$log" | paste -sd, - | sed 's/,/, /g')"
        cuda_line="$(sed -nE 's/^-- +plugin +cuda *: *//p' "$log")"
        if [ "$rc" = 0 ]; then
            build_ok=1
            verdict build pass "$how, ${#targets[@]} targets${plugins:+; $plugins}"
            [ -n "$cuda_line" ] && echo "      cuda: $cuda_line" >>"$summary"
        else
            verdict build FAIL "$([ "$rc" = 124 ] && echo "timed out" || echo "exit $rc") ($how)"
            tail_of "$log" 25
        fi
    fi
fi
bin() { echo "$build/$1"; }
cuda_plugin="$build/plugins/libgraft-cuda.so"
have_cuda_plugin=0
[ "$build_ok" = 1 ] && [ -f "$cuda_plugin" ] && have_cuda_plugin=1

# Why a CUDA step cannot run, or empty.
cuda_skip() {
    if [ "$build_ok" != 1 ]; then echo "the build did not succeed"
    elif [ "$have_cuda_plugin" != 1 ]; then echo "libgraft-cuda.so was not built (see the build log)"
    elif [ -z "$gpu" ]; then echo "no NVIDIA GPU: $gpu_why"
    fi
}

# ctest_step NAME LOG ARGS...: runs ctest, reports the counts and each test
# that did not pass.
ctest_step() {
    local name="$1" log="$2"; shift 2
    local rc=0
    # -V: the log keeps each test's output, the reasons of skips too.
    (cd "$build" && t_run "$log" ctest -V -j 4 --timeout 300 "$@") || rc=$?
    took
    local total passed failed_n skipped
    total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$log")
    passed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | grep -c ' Passed')
    skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | grep -c 'Skipped')
    failed_n=$(( total - passed - skipped ))
    local counts="$total tests: $passed passed, $failed_n failed, $skipped skipped"
    if [ "$rc" = 124 ]; then
        verdict "$name" FAIL "timed out; $counts so far"
    elif [ "$total" = 0 ]; then
        verdict "$name" FAIL "no test ran (exit $rc)"
        tail_of "$log"
    elif [ "$rc" != 0 ] || [ "$failed_n" != 0 ]; then
        verdict "$name" FAIL "$counts"
    elif [ "$passed" = 0 ]; then
        verdict "$name" skipped "$counts"
    else
        verdict "$name" pass "$counts"
    fi
    grep -E '^ *[0-9]+/[0-9]+ Test +#' "$log" | grep -v ' Passed' |
        sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .*(\*\*\*[A-Za-z]+|Not Run).*/      \1: \2/; s/\*\*\*//' >>"$summary"
    # The distinct reasons given for skips.
    grep -hoE 'SKIPPED: .*' "$log" | sort | uniq -c | sort -rn | head -n 5 |
        sed 's/^ */      /' | cut -c1-220 >>"$summary"
}

# ---------------------------------------------------------------- cuda suites
if unwanted cuda; then :
elif [ "$build_ok" != 1 ]; then
    step_took=0; verdict cuda skipped "the build did not succeed"
elif step cuda 20 150; then
    # The GPU-less ones (formulas, load, no_libcuda, graft_info) run here too.
    ctest_step cuda "$logs/02-cuda-ctest.log" -L cuda -LE '^(ops|autograd)$'
fi

# ---------------------------------------------------------------- plugin check
# Without a GPU the checker still runs: it says "no device" (77) at once.
if unwanted plugin-check; then :
elif [ "$build_ok" != 1 ] || [ "$have_cuda_plugin" != 1 ]; then
    step_took=0; verdict plugin-check skipped "$(cuda_skip)"
elif step plugin-check 30 180; then
    log="$logs/03-plugin-check-cuda.log"
    json="$logs/plugin-check-cuda.json"
    rc=0
    t_run "$log" "$(bin tools/graft-plugin-check)" --brief --json="$json" "$cuda_plugin" || rc=$?
    took
    counts="$(grep -E '^(PASSED|FAILED):' "$log" | tail -n 1)"
    case "$rc" in
    0) verdict plugin-check pass "cuda: ${counts:-?}" ;;
    77) verdict plugin-check skipped "cuda: the plugin has no device: $(grep -m1 -iE 'no device|device' "$log" | cut -c1-150)" ;;
    124) verdict plugin-check FAIL "cuda: timed out after $step_took s"; tail_of "$log" ;;
    *) verdict plugin-check FAIL "cuda: exit $rc; ${counts:-no summary line}"
       grep -E '^  FAILED' "$log" | head -n 20 | cut -c1-200 | sed 's/^/    /' >>"$summary" ;;
    esac
    grep -E '^device [0-9]+:.*passed|^plugin-wide' "$log" | sed 's/^/      /' >>"$summary"
fi

# ---------------------------------------------------------------- cross-device, examples
if unwanted cross-device; then :
elif [ "$build_ok" != 1 ]; then
    step_took=0; verdict cross-device skipped "the build did not succeed"
elif step cross-device 20 150; then
    # Skipped (77) one by one without a GPU: run, so the rehearsal counts them.
    ctest_step cross-device "$logs/04-cross-device-ctest.log" -L cuda -L '^(ops|autograd)$'
fi
why="$(cuda_skip)"
if unwanted examples; then :
elif [ -n "$why" ]; then
    step_took=0; verdict examples skipped "$why"
elif step examples 20 120; then
    log="$logs/05-examples.log"
    res=()
    bad=0
    while read -r ex args; do
        [ -x "$(bin "examples/$ex")" ] || { res+=("$ex: not built"); continue; }
        rc=0
        echo "== $ex $args" >>"$log"
        # shellcheck disable=SC2086
        GRAFT_PLUGINS=cuda,reference GRAFT_DEVICE=cuda:0 t_run "$log" "$(bin "examples/$ex")" $args || rc=$?
        if [ "$rc" = 0 ]; then res+=("$ex: pass")
        elif tail -n 3 "$log" | grep -q "data set is not there"; then res+=("$ex: skipped (no data set)")
        else res+=("$ex: FAIL ($rc)"); bad=1
        fi
    done <<'EOF'
train_mlp --epochs 10 --min-accuracy 0.9
train_cnn --min-accuracy 0.95
custom_function
hessian_vector
transformer --steps 200 --min-accuracy 0.95
autoencoder --limit 2000 --epochs 1 --max-loss-ratio 0.25
EOF
    took
    verdict examples "$([ $bad = 0 ] && echo pass || echo FAIL)" "GRAFT_DEVICE=cuda:0: $(IFS=,; echo "${res[*]}" | sed 's/,/, /g')"
fi

# ---------------------------------------------------------------- memcheck
why="$(cuda_skip)"
[ -z "$why" ] && [ -z "$cs" ] && why="compute-sanitizer not found"
if unwanted memcheck; then :
elif [ -n "$why" ]; then
    step_took=0; verdict memcheck skipped "$why"
elif step memcheck 30 150; then
    log="$logs/06-memcheck.log"
    res=()
    errors=0
    timed_out=0
    # Most value first: every op family, then memory and errors.
    for t in elementwise nn reduce_linalg grads complex memory_errors; do
        exe="$(bin "tests/cuda/cuda_test_cuda_xd_$t")"
        [ -x "$exe" ] || exe="$(find "$build/tests" -name "cuda_test_cuda_xd_$t" -type f | head -n 1)"
        [ -n "$exe" ] && [ -x "$exe" ] || { res+=("$t: not built"); continue; }
        if [ "$(tmo)" -lt 10 ]; then res+=("$t: skipped: out of budget"); continue; fi
        rc=0
        one="$logs/memcheck-$t.log"
        # API errors are not reported: memory_errors provokes out-of-memory on purpose.
        GRAFT_PLUGINS=cuda,reference GRAFT_DEVICE=cpu t_run "$one" "$cs" --tool memcheck \
            --report-api-errors no --error-exitcode 99 "$exe" || rc=$?
        n="$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$one" | tail -n 1)"
        case "$rc" in
        0) res+=("$t: ${n:-0} errors") ;;
        99) res+=("$t: ${n:-some} ERRORS"); errors=1 ;;
        124) res+=("$t: timed out"); timed_out=1 ;;
        77) res+=("$t: skipped (no device)") ;;
        *) res+=("$t: exit $rc, ${n:-?} errors"); errors=1 ;;
        esac
        cat "$one" >>"$log"
        rm -f "$one"
    done
    took
    if [ "$errors" = 1 ]; then verdict memcheck FAIL "$(IFS=,; echo "${res[*]}" | sed 's/,/; /g')"
    elif [ "$timed_out" = 1 ]; then verdict memcheck partial "clean where it finished: $(IFS=,; echo "${res[*]}" | sed 's/,/; /g')"
    else verdict memcheck pass "clean: $(IFS=,; echo "${res[*]}" | sed 's/,/; /g')"
    fi
    [ "$errors" = 1 ] && grep -E '^========= (Invalid|Program hit|    at )' "$log" | head -n 20 | cut -c1-200 |
        sed 's/^/      /' >>"$summary"
fi

# ---------------------------------------------------------------- bench against torch
bench_table=""
if unwanted bench; then :
elif [ "$build_ok" != 1 ] || [ ! -x "$(bin tools/graft-bench)" ]; then
    step_took=0; verdict bench skipped "graft-bench was not built"
elif [ -z "$py" ]; then
    step_took=0; verdict bench skipped "no python3"
elif [ -n "$gpu" ] && [ "$have_cuda_plugin" != 1 ]; then
    step_took=0; verdict bench skipped "$(cuda_skip)"
elif step bench 40 150; then
    log="$logs/07-bench.log"
    bench_table="$out/bench.txt"
    rc=0
    if [ -n "$gpu" ]; then
        # shellcheck disable=SC2094
        GRAFT_PLUGINS=cuda,reference timeout -k 5 "$(tmo)" "$py" "$here/tools/bench_gpu_torch.py" \
            "$(bin tools/graft-bench)" --device cuda:0 --json "$out/bench.json" \
            >"$bench_table" 2>>"$log" || rc=$?
        what="graft cuda:0 against $([ "$torch_v" = none ] && echo "no torch" || echo "torch $torch_v")"
    else
        # Rehearsal: the same script and table on the reference CPU device,
        # graft's small shapes, no torch.
        GRAFT_PLUGINS=reference timeout -k 5 "$(tmo)" "$py" "$here/tools/bench_gpu_torch.py" \
            "$(bin tools/graft-bench)" --device cpu:0 --quick --no-torch --matmul-sizes 64,128 \
            --json "$out/bench.json" >"$bench_table" 2>>"$log" || rc=$?
        what="rehearsal on cpu:0 (reference, --quick, no torch): $gpu_why"
    fi
    took
    case "$rc" in
    0) verdict bench pass "$what" ;;
    124) verdict bench FAIL "timed out ($what)"; tail_of "$log" ;;
    *) verdict bench FAIL "exit $rc ($what)"; tail_of "$log" ;;
    esac
fi

# ---------------------------------------------------------------- vulkan and opencl
# The plugins: the build's, else the extras'. Loaders: the extras' .debs
# unpacked inside DIR, else the system's. Driver files: NVIDIA's.
find_lib() { # find_lib NAME: a path of the shared library NAME, or nothing
    ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }'
    for d in ${LD_LIBRARY_PATH//:/ } /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64; do
        [ -e "$d/$1" ] && { echo "$d/$1"; return; }
    done
}
vk_why=""
ocl_why=""
if [ -z "$gpu" ]; then
    vk_why="no NVIDIA GPU: $gpu_why"
    ocl_why="$vk_why"
else
    if [ -d "$extras" ]; then
        for f in "$extras"/debs/*.deb "$extras"/*.deb; do
            [ -f "$f" ] && dpkg -x "$f" "$extras/root" 2>/dev/null
        done
        [ -d "$extras/root/usr/lib/x86_64-linux-gnu" ] &&
            export LD_LIBRARY_PATH="$extras/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    plugin_of() { # plugin_of NAME: the build's plugin, else the extras'
        for f in "$build/plugins/libgraft-$1.so" "$extras/plugins/libgraft-$1.so" "$extras/libgraft-$1.so"; do
            [ -f "$f" ] && { echo "$f"; return; }
        done
    }
    vk_plugin="$(plugin_of vulkan)"
    ocl_plugin="$(plugin_of opencl)"
    vk_icd=""
    for f in "${VK_DRIVER_FILES:-}" /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
        /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
        [ -n "$f" ] && [ -f "$f" ] && { vk_icd="$f"; break; }
    done
    if [ -z "$vk_plugin" ]; then vk_why="libgraft-vulkan.so neither built nor in $extras/plugins"
    elif [ -z "$(find_lib libvulkan.so.1)" ]; then vk_why="no Vulkan loader (libvulkan.so.1): bring libvulkan1's .deb in $extras/debs"
    elif [ -z "$vk_icd" ]; then vk_why="no NVIDIA Vulkan driver file (nvidia_icd.json)"
    else export VK_DRIVER_FILES="$vk_icd" VK_ICD_FILENAMES="$vk_icd"
    fi
    nv_ocl="$(find_lib libnvidia-opencl.so.1)"
    if [ -z "$ocl_plugin" ]; then ocl_why="libgraft-opencl.so neither built nor in $extras/plugins"
    elif [ -z "$(find_lib libOpenCL.so.1)" ]; then ocl_why="no OpenCL loader (libOpenCL.so.1): bring ocl-icd-libopencl1's .deb in $extras/debs"
    elif [ -z "$nv_ocl" ]; then ocl_why="no NVIDIA OpenCL driver (libnvidia-opencl.so.1)"
    else export OCL_ICD_FILENAMES="$nv_ocl"
    fi
fi
if unwanted vulkan-opencl; then :
elif [ -n "$vk_why" ] && [ -n "$ocl_why" ]; then
    step_took=0
    verdict vulkan skipped "$vk_why"
    verdict opencl skipped "$ocl_why"
elif step vulkan-opencl 30 150; then
    log="$logs/08-vulkan-opencl.log"
    others=()
    plugin_dirs=""
    for p in vulkan opencl; do
        if [ "$p" = vulkan ]; then why="$vk_why"; so="$vk_plugin"; else why="$ocl_why"; so="$ocl_plugin"; fi
        if [ -n "$why" ]; then step_took=0; verdict "$p" skipped "$why"; continue; fi
        if [ "$(tmo)" -lt 20 ]; then step_took=0; verdict "$p" skipped "out of budget"; continue; fi
        s0=$(now)
        rc=0
        t_run "$log" timeout -k 5 $(( $(tmo) / 2 )) "$(bin tools/graft-plugin-check)" --quick --brief "$so" || rc=$?
        step_took=$(( $(now) - s0 ))
        counts="$(grep -E '^(PASSED|FAILED):' "$log" | tail -n 1)"
        case "$rc" in
        0) verdict "$p" pass "graft-plugin-check --quick: $counts" ;;
        77) verdict "$p" skipped "the plugin found no device on the NVIDIA driver" ;;
        124) verdict "$p" FAIL "graft-plugin-check --quick timed out" ;;
        *) verdict "$p" FAIL "graft-plugin-check --quick: exit $rc; ${counts:-no summary}" ;;
        esac
        [ "$rc" = 0 ] || [ "$rc" = 1 ] || continue
        others+=(--other "$p")
        plugin_dirs="${plugin_dirs:+$plugin_dirs:}$(dirname "$so")"
    done
    if [ ${#others[@]} -gt 0 ] && [ "$(tmo)" -ge 15 ]; then
        rc=0
        GRAFT_PLUGIN_PATH="$plugin_dirs" GRAFT_PLUGINS="cuda,vulkan,opencl,reference" \
            timeout -k 5 "$(tmo)" "$py" "$here/tools/bench_gpu_torch.py" "$(bin tools/graft-bench)" \
            --device "" "${others[@]}" --reference-json "$out/bench.json" --json "$out/bench-others.json" \
            >"$out/bench-others.txt" 2>>"$log" || rc=$?
        took
        verdict vk-ocl-bench "$([ "$rc" = 0 ] && echo pass || echo FAIL)" "matmul 4096 / cuBLAS, add 16M / d2d copy"
    fi
fi

# ---------------------------------------------------------------- the tables
for f in "$out/bench.txt" "$out/bench-others.txt"; do
    [ -s "$f" ] || continue
    say ""
    cat "$f" >>"$summary"
    rm -f "$f"
done
finish
