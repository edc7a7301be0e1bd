// enqueue_loop: the host time of N back-to-back enqueues (an empty kernel's launch on a created stream), to
// measure what `async-lab trace` adds per call: run it with and without the trace and compare the medians.
// The stream is synchronized every 512 launches so the launch queue never fills (a full queue blocks).
//
// Build: nvcc -O2 -arch=sm_90 -o enqueue_loop enqueue_loop.cu
// Run:   ./enqueue_loop [N]        (default 100000); one JSON line on stdout
// Exit status: 0 done, 1 a CUDA error (named on stderr), 2 a bad command line.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty() {}

int main(int argc, char** argv) {
    const long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 100000;
    if (n <= 0) {
        std::fprintf(stderr, "usage: enqueue_loop [N > 0]\n");
        return 2;
    }
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess) {
        std::fprintf(stderr, "enqueue_loop: cudaStreamCreate failed\n");
        return 1;
    }
    // Warm-up: the first launch loads the module; the tracer's own first use costs more too.
    for (int i = 0; i < 1000; ++i) empty<<<1, 1, 0, s>>>();
    cudaStreamSynchronize(s);
    std::vector<double> ns(n);
    for (long i = 0; i < n; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        empty<<<1, 1, 0, s>>>();
        ns[i] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        if (i % 512 == 511) cudaStreamSynchronize(s);
    }
    if (cudaStreamSynchronize(s) != cudaSuccess || cudaGetLastError() != cudaSuccess) {
        std::fprintf(stderr, "enqueue_loop: a launch failed\n");
        return 1;
    }
    // The mean as well as the median: what a loop pays in all, its slow bursts included.
    double sum = 0;
    for (double v : ns) sum += v;
    std::sort(ns.begin(), ns.end());
    std::printf("{\"calls\":%ld,\"median_ns\":%.0f,\"mean_ns\":%.0f,\"p10_ns\":%.0f,\"p90_ns\":%.0f,\"p99_ns\":%.0f}\n",
                n, ns[n / 2], sum / n, ns[n / 10], ns[n * 9 / 10], ns[n * 99 / 100]);
    return 0;
}
