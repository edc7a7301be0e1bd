// native_program: a C++ program's calls that wait, each inside an NVTX range and timed by the program itself,
// for `async-lab trace` on a program built with symbols (native frames: file, line, function). Each step is
// an `async-lab-step` line on stdout (its thread and CLOCK_MONOTONIC times, as reference/frameworks/steps.py
// prints them), so `async-lab trace --steps` can put the program's own times beside the tracer's.
//
// Build: nvcc -g -O2 -arch=sm_90 -o native_program native_program.cu
// Run:   ./native_program [MiB]   (default 256)
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        cudaError_t err_ = (call);                                                                    \
        if (err_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "native_program: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (0)

__global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static unsigned long long now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

// One step: opened with its name and the call it is about, closed by `done`.
struct Step {
    const char* name;
    const char* call;
    unsigned long long start;
    Step(const char* n, const char* c) : name(n), call(c) {
        nvtxRangePushA(name);
        start = now_ns();
    }
    void done() {
        unsigned long long end = now_ns();
        nvtxRangePop();
        std::printf("async-lab-step {\"program\":\"native_program\",\"step\":\"%s\",\"call\":\"%s\",\"tid\":%ld,"
                    "\"start_ns\":%llu,\"end_ns\":%llu}\n",
                    name, call, (long)syscall(SYS_gettid), start, end);
        std::fflush(stdout);
        std::fprintf(stderr, "native_program: %s: %.3f ms (%s)\n", name, (end - start) / 1e6, call);
    }
};

static void copy_pageable(void* dst, const void* src, size_t bytes, cudaStream_t s) {
    Step step("h2d-pageable", "cudaMemcpyAsync");
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    step.done();
}

static void copy_pinned(void* dst, const void* src, size_t bytes, cudaStream_t s) {
    Step step("h2d-pinned", "cudaMemcpyAsync");
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    step.done();
}

static void read_back(void* dst, const void* src, size_t bytes, cudaStream_t s) {
    Step step("d2h-then-sync", "cudaStreamSynchronize");
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    step.done();
}

static void free_while_busy(void* p) {
    Step step("free", "cudaFree");
    CHECK(cudaFree(p));
    step.done();
}

int main(int argc, char** argv) {
    const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
    if (mib == 0) {
        std::fprintf(stderr, "usage: native_program [MiB]\n");
        return 2;
    }
    const size_t bytes = mib << 20;
    const long long cycles = 100000000;  // about 50 ms on an H200
    cudaStream_t s, side;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    void *dev, *spare, *pinned;
    CHECK(cudaMalloc(&dev, bytes));
    CHECK(cudaMalloc(&spare, 1 << 20));
    CHECK(cudaMallocHost(&pinned, bytes));
    char* pageable = static_cast<char*>(std::malloc(bytes));
    for (size_t i = 0; i < bytes; i += 4096) pageable[i] = 1;
    spin<<<1, 1, 0, s>>>(1000);  // the kernel's first launch, untimed
    CHECK(cudaDeviceSynchronize());

    spin<<<1, 1, 0, s>>>(cycles);
    copy_pageable(dev, pageable, bytes, s);
    CHECK(cudaDeviceSynchronize());

    spin<<<1, 1, 0, s>>>(cycles);
    copy_pinned(dev, pinned, bytes, s);
    CHECK(cudaDeviceSynchronize());

    spin<<<1, 1, 0, s>>>(cycles);
    read_back(pinned, dev, 1 << 20, s);
    CHECK(cudaDeviceSynchronize());

    spin<<<1, 1, 0, side>>>(cycles);
    free_while_busy(spare);
    CHECK(cudaDeviceSynchronize());

    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(dev));
    std::free(pageable);
    std::fprintf(stderr, "native_program: done\n");
    return 0;
}
