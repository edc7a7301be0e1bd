// A first launch under lazy loading (CUDA_MODULE_LOADING=LAZY, CUDA's default since 12.2) made right behind a
// long kernel: the kernel in the launch's own stream (`same`) or on another stream (`other`). The kernel
// launched for the first time is in this file's module, which the long kernel already loaded (`function`:
// only its function loads at its first launch), or in lazy_load_module.cu's module (`module`: its whole
// module loads then). The lab measured that such loads wait for the device (K4, the loading family); with
// CUPTI's overhead records the trace shows when the load began (docs/trace.md).
//
// Prints one JSON line: the first launch's own time on the host, and how long the kernel ahead ran.
// Build: nvcc -O2 -g -arch=sm_90 -o lazy_load lazy_load.cu lazy_load_module.cu
// Usage: CUDA_MODULE_LOADING=LAZY ./lazy_load same|other function|module [HOLD_MS]   (default 50 ms)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

__global__ void spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void first_function(int *p) { p[threadIdx.x] = 1; }

// lazy_load_module.cu: a kernel in a module of its own, launched there.
void launch_first_module(int *p, cudaStream_t s);

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "lazy_load: %s: %s\n", #x, cudaGetErrorString(e_));           \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char **argv) {
  const char *stream = argc > 1 ? argv[1] : "same";
  const char *kernel = argc > 2 ? argv[2] : "function";
  double hold_ms = argc > 3 ? atof(argv[3]) : 50.0;
  if ((strcmp(stream, "same") && strcmp(stream, "other")) || (strcmp(kernel, "function") && strcmp(kernel, "module"))) {
    fprintf(stderr, "usage: lazy_load same|other function|module [HOLD_MS]\n");
    return 2;
  }
  int *d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  // The long kernel's own first launch (its module loads here), then its clock: cycles per ms on this GPU.
  spin<<<1, 1, 0, a>>>(1000);
  CHECK(cudaStreamSynchronize(a));
  const long long calibration = 20000000;
  CHECK(cudaEventRecord(e0, a));
  spin<<<1, 1, 0, a>>>(calibration);
  CHECK(cudaEventRecord(e1, a));
  CHECK(cudaEventSynchronize(e1));
  float calibration_ms = 0;
  CHECK(cudaEventElapsedTime(&calibration_ms, e0, e1));
  const long long cycles = (long long)(calibration / calibration_ms * hold_ms);

  CHECK(cudaEventRecord(e0, a));
  spin<<<1, 1, 0, a>>>(cycles);
  CHECK(cudaEventRecord(e1, a));
  cudaStream_t s = strcmp(stream, "other") == 0 ? b : a;
  auto t0 = std::chrono::steady_clock::now();
  if (strcmp(kernel, "module") == 0) {
    launch_first_module(d, s);
  } else {
    first_function<<<1, 32, 0, s>>>(d);
  }
  auto t1 = std::chrono::steady_clock::now();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  float spin_ms = 0;
  CHECK(cudaEventElapsedTime(&spin_ms, e0, e1));
  printf("{\"program\":\"lazy_load\",\"stream\":\"%s\",\"kernel\":\"%s\",\"first_launch_ms\":%.3f,"
         "\"kernel_ahead_ms\":%.3f}\n",
         stream, kernel, std::chrono::duration<double, std::milli>(t1 - t0).count(), spin_ms);
  CHECK(cudaFree(d));
  return 0;
}
