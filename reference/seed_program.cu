// seed_program: the seed question's program as the accepted answer's author ran it, for `async-lab trace`
// to trace unmodified. A 2 GiB host buffer (pageable or pinned), copied to the GPU, a kernel that sleeps
// 1e6 clock cycles on a 128 x 128 launch, the copy back, a stream callback, a stream synchronize, all on
// one created stream. Each call's host time goes to stderr, so a trace can be checked against it.
//
// Build: nvcc -O2 -arch=sm_90 -o seed_program seed_program.cu
// Run:   ./seed_program pageable|pinned [BYTES]
// Exit status: 0 done, 1 a CUDA error (named on stderr), 2 a bad command line.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                   \
    do {                                                                                              \
        cudaError_t err_ = (call);                                                                    \
        if (err_ != cudaSuccess) {                                                                    \
            std::fprintf(stderr, "seed_program: %s failed: %s\n", #call, cudaGetErrorString(err_));   \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (0)

__global__ void sleep_cycles(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static void CUDART_CB on_done(cudaStream_t, cudaError_t, void* flag) { *static_cast<volatile int*>(flag) = 1; }

static double since_us(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
    if (argc < 2 || (std::strcmp(argv[1], "pinned") != 0 && std::strcmp(argv[1], "pageable") != 0)) {
        std::fprintf(stderr, "usage: seed_program pageable|pinned [BYTES]\n");
        return 2;
    }
    const bool pinned = std::strcmp(argv[1], "pinned") == 0;
    const size_t bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (size_t(2) << 30);
    if (bytes == 0) {
        std::fprintf(stderr, "seed_program: BYTES must be a positive number\n");
        return 2;
    }

    char* host = nullptr;
    if (pinned) {
        CHECK(cudaMallocHost(&host, bytes));
    } else {
        host = static_cast<char*>(std::malloc(bytes));
        if (host == nullptr) {
            std::fprintf(stderr, "seed_program: cannot allocate %zu bytes of host memory\n", bytes);
            return 1;
        }
    }
    std::memset(host, 1, bytes);  // touch every page before timing
    char* dev = nullptr;
    CHECK(cudaMalloc(&dev, bytes));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    volatile int done = 0;

    auto t = std::chrono::steady_clock::now();
    CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream));
    std::fprintf(stderr, "cudaMemcpyAsync host -> device: %.1f us\n", since_us(t));

    t = std::chrono::steady_clock::now();
    sleep_cycles<<<128, 128, 0, stream>>>(1000000LL);
    CHECK(cudaGetLastError());
    std::fprintf(stderr, "kernel launch: %.1f us\n", since_us(t));

    t = std::chrono::steady_clock::now();
    CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream));
    std::fprintf(stderr, "cudaMemcpyAsync device -> host: %.1f us\n", since_us(t));

    t = std::chrono::steady_clock::now();
    CHECK(cudaStreamAddCallback(stream, on_done, (void*)&done, 0));
    std::fprintf(stderr, "cudaStreamAddCallback: %.1f us\n", since_us(t));

    t = std::chrono::steady_clock::now();
    CHECK(cudaStreamSynchronize(stream));
    std::fprintf(stderr, "cudaStreamSynchronize: %.1f us (callback ran: %d)\n", since_us(t), done);

    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(dev));
    if (pinned) {
        CHECK(cudaFreeHost(host));
    } else {
        std::free(host);
    }
    return 0;
}
