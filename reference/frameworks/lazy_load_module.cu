// The kernel of lazy_load.cu's `module` case: in a file of its own, so in a module of its own, which lazy
// loading loads at this kernel's first launch.
#include <cuda_runtime.h>

__global__ void first_module(int *p) { p[threadIdx.x] = 2; }

void launch_first_module(int *p, cudaStream_t s) { first_module<<<1, 32, 0, s>>>(p); }
