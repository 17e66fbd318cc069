# SPDX-License-Identifier: BSD-3-Clause
# The cuda plugin must load where there is no NVIDIA driver: it may not name
# libcuda.so.1 among its DT_NEEDED libraries (the static CUDA runtime opens
# the driver itself, at run time). Nor may it name cuBLAS or cuDNN: every
# graft process loads every plugin, and the plugin opens them on first use
# (cuda_libs.c) so that a process without a CUDA device does not pay for
# them. Run with -DOBJDUMP=... -DPLUGIN=...
if(NOT OBJDUMP)
  find_program(OBJDUMP NAMES objdump)
endif()
if(NOT OBJDUMP)
  message(FATAL_ERROR "no objdump to read ${PLUGIN}'s dynamic section")
endif()
execute_process(COMMAND "${OBJDUMP}" -p "${PLUGIN}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} -p ${PLUGIN} failed (${rc})")
endif()
string(REGEX MATCHALL "NEEDED +[^\n]+" needed "${out}")
string(REPLACE ";" "\n  " shown "${needed}")
message(STATUS "${PLUGIN}:\n  ${shown}")
if(NOT needed MATCHES "libc\\.so")
  message(FATAL_ERROR "the dynamic section was not read as expected (no libc among: ${needed})")
endif()
if(needed MATCHES "libcuda\\.so")
  message(FATAL_ERROR "the cuda plugin links the driver library (libcuda.so) directly: it would "
    "fail to load on machines without the NVIDIA driver; link the CUDA runtime statically")
endif()
if(needed MATCHES "libcudart\\.so")
  message(FATAL_ERROR "the cuda plugin links the shared CUDA runtime; the static one is expected")
endif()
if(needed MATCHES "libcublas|libcudnn")
  message(FATAL_ERROR "the cuda plugin links cuBLAS or cuDNN: it must open them at run time "
    "(cuda_libs.c), or every graft process pays for them, GPU or not")
endif()
