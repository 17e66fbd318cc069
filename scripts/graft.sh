#!/usr/bin/env bash
# graft.sh — set up, build and run graft on a Debian 12 machine.
#
#   scripts/graft.sh train   install what is missing, build, run the training example
#                            on the device GRAFT_DEVICE names (default: cpu)
#   scripts/graft.sh test    install what is missing, build, run the whole test suite (CTest)
#   scripts/graft.sh asan    the same suite built with AddressSanitizer + UBSan
#   scripts/graft.sh tsan    the threaded tests built with ThreadSanitizer
#   scripts/graft.sh setup   only install what is missing
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores),
# GRAFT_SKIP_SETUP=1 to skip the package step.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(nproc)}"

packages=(cmake build-essential pkg-config python3 python3-numpy
          libdnnl-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev
          libvulkan-dev mesa-vulkan-drivers glslc spirv-tools vulkan-validationlayers
          libdlpack-dev valgrind libclang-rt-14-dev libopenmpi-dev openmpi-bin)

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

build() { # build <dir> [cmake args...]
    local dir="$1"; shift
    cmake -S "$here" -B "$dir" -DGRAFT_WERROR=ON "$@"
    cmake --build "$dir" -j "$jobs"
}

cmd="${1:-train}"
case "$cmd" in
setup) setup ;;
train)
    setup
    dir="${BUILD_DIR:-$here/build}"
    build "$dir"
    "$dir/examples/train_mlp"
    ;;
test)
    setup
    dir="${BUILD_DIR:-$here/build}"
    build "$dir"
    ctest --test-dir "$dir" --output-on-failure -j "$jobs"
    ;;
asan)
    setup
    dir="${BUILD_DIR:-$here/build-asan}"
    # The CUDA plugin cannot be built with the sanitizers (nvcc) and cannot
    # run here; the plain build compiles and links it.
    build "$dir" -DGRAFT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug -DGRAFT_WITH_CUDA=OFF
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir "$dir" --output-on-failure -j "$jobs" -LE "nosan"
    ;;
tsan)
    setup
    dir="${BUILD_DIR:-$here/build-tsan}"
    # Only the threaded core tests run here: no device plugins but the reference.
    build "$dir" -DGRAFT_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug -DGRAFT_WITH_CUDA=OFF \
        -DGRAFT_WITH_ONEDNN=OFF -DGRAFT_WITH_OPENCL=OFF -DGRAFT_WITH_VULKAN=OFF
    TSAN_OPTIONS=halt_on_error=1 ctest --test-dir "$dir" --output-on-failure -j "$jobs" -L threads
    ;;
*)
    echo "usage: $0 train|test|asan|tsan|setup" >&2
    exit 2
    ;;
esac
