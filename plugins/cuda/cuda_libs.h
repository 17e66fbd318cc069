/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_libs.h — cuBLAS, cuDNN and cuFFT, opened at run time.
 *
 * The plugin names neither library among its DT_NEEDED: every graft process
 * loads every plugin it finds, and libcublas.so (with the libcublasLt.so it
 * pulls in) alone costs about 150 MB of resident memory at load, GPU or not.
 * The first device_open opens them instead (cu_blas_load, cu_dnn_load), under
 * the SONAMEs the build found (GRAFT_CUDA_CUBLAS_SONAME, _CUDNN_SONAME), first
 * through the dynamic loader's search (LD_LIBRARY_PATH, the plugin's RUNPATH,
 * the ldconfig cache), then in the directory the build found them in. They
 * stay loaded until the process ends.
 *
 * Every call goes through a table of pointers typed with __typeof__ of the
 * header's own declarations, so a call is checked against the header as a
 * direct call would be: cu_blas.cublasCreate(&h), cu_dnn.cudnnCreate(&h).
 * cublas_v2.h maps some names to their _v2 symbols by macro (cublasCreate is
 * cublasCreate_v2); the members and the symbols looked up follow the mapping.
 * A member may be called only after its library's load returned OK, which
 * holds wherever a handle exists (dev->blas, dev->dnn). */
#ifndef GRAFT_CUDA_LIBS_H
#define GRAFT_CUDA_LIBS_H

#include <cublas_v2.h>

#include "graft_plugin.h"

#ifdef GRAFT_CUDA_HAVE_CUDNN
#include <cudnn.h>
#endif
#ifdef GRAFT_CUDA_HAVE_CUFFT
#include <cufft.h>
#endif

/* Every cuBLAS and cuDNN function the plugin calls, one X() each. */
#define CU_BLAS_FUNCTIONS(X)                                                                       \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasSetStream)                                                                             \
    X(cublasGetStatusName)                                                                         \
    X(cublasGetStatusString)                                                                       \
    X(cublasGemmStridedBatchedEx)                                                                  \
    X(cublasGemmBatchedEx)

#define CU_DNN_FUNCTIONS(X)                                                                        \
    X(cudnnCreate)                                                                                 \
    X(cudnnDestroy)                                                                                \
    X(cudnnSetStream)                                                                              \
    X(cudnnGetErrorString)                                                                         \
    X(cudnnCreateTensorDescriptor)                                                                 \
    X(cudnnDestroyTensorDescriptor)                                                                \
    X(cudnnSetTensor4dDescriptor)                                                                  \
    X(cudnnCreateFilterDescriptor)                                                                 \
    X(cudnnDestroyFilterDescriptor)                                                                \
    X(cudnnSetFilter4dDescriptor)                                                                  \
    X(cudnnCreateConvolutionDescriptor)                                                            \
    X(cudnnDestroyConvolutionDescriptor)                                                           \
    X(cudnnSetConvolution2dDescriptor)                                                             \
    X(cudnnSetConvolutionGroupCount)                                                               \
    X(cudnnSetConvolutionMathType)                                                                 \
    X(cudnnGetConvolutionForwardAlgorithm_v7)                                                      \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                                 \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                               \
    X(cudnnConvolutionForward)                                                                     \
    X(cudnnConvolutionBackwardData)                                                                \
    X(cudnnConvolutionBackwardFilter)                                                              \
    X(cudnnAddTensor)

/* cuFFT (FFT): opened by the first FFT query or launch, not by device_open:
 * it is the largest of the three (about 280 MB on disk), and most
 * processes transform nothing. */
#define CU_FFT_FUNCTIONS(X)                                                                        \
    X(cufftCreate)                                                                                 \
    X(cufftDestroy)                                                                                \
    X(cufftSetStream)                                                                              \
    X(cufftGetVersion)                                                                             \
    X(cufftMakePlanMany64)                                                                         \
    X(cufftExecC2C)                                                                                \
    X(cufftExecZ2Z)                                                                                \
    X(cufftExecR2C)                                                                                \
    X(cufftExecD2Z)                                                                                \
    X(cufftExecC2R)                                                                                \
    X(cufftExecZ2D)

#define CU_LIBS_MEMBER(f) __typeof__(f) *f;

typedef struct cu_blas_api {
    CU_BLAS_FUNCTIONS(CU_LIBS_MEMBER)
} cu_blas_api;
/* Filled by the first successful cu_blas_load; read-only afterwards. */
extern cu_blas_api cu_blas;

/* Opens cuBLAS and resolves every member of cu_blas, once per process (later
 * calls return the first call's answer). Fails: DEVICE, with "<op>: cuBLAS
 * could not be loaded: <dlerror>; install libcublas N or set LD_LIBRARY_PATH". */
gfp_status cu_blas_load(const char *op);

#ifdef GRAFT_CUDA_HAVE_CUDNN
typedef struct cu_dnn_api {
    CU_DNN_FUNCTIONS(CU_LIBS_MEMBER)
} cu_dnn_api;
extern cu_dnn_api cu_dnn;

/* As cu_blas_load, for cuDNN, but without setting an error: NULL once every
 * member of cu_dnn is resolved, otherwise why not ("cuDNN could not be
 * loaded: ..."). device_open logs it and goes on without cuDNN (the plugin's
 * own convolution kernels). */
const char *cu_dnn_load(void);
#endif

#ifdef GRAFT_CUDA_HAVE_CUFFT
typedef struct cu_fft_api {
    CU_FFT_FUNCTIONS(CU_LIBS_MEMBER)
} cu_fft_api;
extern cu_fft_api cu_fft;

/* As cu_dnn_load, for cuFFT: NULL once every member of cu_fft is resolved,
 * otherwise why not ("cuFFT could not be loaded: ...; install libcufft N
 * or set LD_LIBRARY_PATH"). The query then answers NONE for FFT (the core
 * runs it on its fallback device) and a launch fails with the reason. */
const char *cu_fft_load(void);
#endif

#endif
