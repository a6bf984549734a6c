// Shared helpers for the nsighttk CUDA samples: error checking and result verification.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),        \
                   __FILE__, __LINE__, cudaGetErrorString(err_));                         \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

// Check the last launch and wait for it, so that kernel faults surface here.
#define CUDA_CHECK_LAUNCH()                 \
  do {                                      \
    CUDA_CHECK(cudaGetLastError());         \
    CUDA_CHECK(cudaDeviceSynchronize());    \
  } while (0)

// Optional positional integer argument with a default, e.g. the element count or block size.
static inline long arg_or(int argc, char **argv, int index, long fallback) {
  if (argc > index) {
    char *end = nullptr;
    long v = std::strtol(argv[index], &end, 10);
    if (end && *end == '\0' && v > 0) return v;
    std::fprintf(stderr, "invalid argument '%s': expected a positive integer\n", argv[index]);
    std::exit(64);
  }
  return fallback;
}

// Print the max error and return the process exit code: 0 when within tolerance, 1 otherwise.
static inline int report_max_error(const char *what, float max_error, float tolerance) {
  std::printf("%s: max error %g\n", what, max_error);
  if (!(max_error <= tolerance)) {
    std::fprintf(stderr, "%s: FAILED (max error %g > %g)\n", what, max_error, tolerance);
    return 1;
  }
  return 0;
}

// Prefetch managed memory to a device (the API changed in CUDA 13: a cudaMemLocation and flags).
static inline void prefetch_to_device(const void *ptr, size_t bytes, int device, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = device;
  CUDA_CHECK(cudaMemPrefetchAsync(ptr, bytes, loc, 0, stream));
#else
  CUDA_CHECK(cudaMemPrefetchAsync(ptr, bytes, device, stream));
#endif
}
