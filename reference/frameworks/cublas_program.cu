// cublas_program: a C++ program written the way users write one, for `async-lab trace` on a program built
// with symbols: matrices filled on the host and copied over, 40 single-precision GEMMs through cuBLAS, a
// scratch buffer freed right after them (cudaFree waits for the whole device, so it waits for the GEMMs), and
// the result copied back. No NVTX. Its own timing of the free and of the copy back are `async-lab-step`
// lines on stdout (thread and CLOCK_MONOTONIC times, as reference/frameworks/steps.py prints them).
//
// Build: nvcc -g -O2 -arch=sm_90 -o cublas_program cublas_program.cu -lcublas
// Run:   ./cublas_program [N]   (N × N matrices; default 4096)
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CUDA_CHECK(call)                                                                               \
    do {                                                                                               \
        cudaError_t err_ = (call);                                                                     \
        if (err_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "cublas_program: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            std::exit(1);                                                                              \
        }                                                                                              \
    } while (0)

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t st_ = (call);                                                       \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                \
            std::fprintf(stderr, "cublas_program: %s failed: status %d\n", #call, (int)st_); \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

static unsigned long long now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static void print_step(const char* name, const char* call, unsigned long long start, unsigned long long end) {
    std::printf("async-lab-step {\"program\":\"cublas_program\",\"step\":\"%s\",\"call\":\"%s\",\"tid\":%ld,"
                "\"start_ns\":%llu,\"end_ns\":%llu}\n",
                name, call, (long)syscall(SYS_gettid), start, end);
    std::fflush(stdout);
}

static void multiply(cublasHandle_t handle, int n, const float* a, const float* b, float* c, int times) {
    const float alpha = 1.0f / n, beta = 0.0f;
    for (int i = 0; i < times; ++i) {
        CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n));
    }
}

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
    if (n <= 0) {
        std::fprintf(stderr, "usage: cublas_program [N]\n");
        return 2;
    }
    const size_t bytes = size_t(n) * n * sizeof(float);
    std::vector<float> host_a(size_t(n) * n, 1.0f), host_b(size_t(n) * n, 2.0f), host_c(size_t(n) * n);

    float *a, *b, *c;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&c, bytes));
    CUDA_CHECK(cudaMemcpy(a, host_a.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, host_b.data(), bytes, cudaMemcpyHostToDevice));

    cublasHandle_t handle;
    CUBLAS_CHECK(cublasCreate(&handle));
    multiply(handle, n, a, b, c, 1);  // cuBLAS picks and loads its kernel
    CUDA_CHECK(cudaDeviceSynchronize());

    float* scratch;
    CUDA_CHECK(cudaMalloc(&scratch, 1 << 20));
    multiply(handle, n, a, b, c, 40);
    unsigned long long t0 = now_ns();
    CUDA_CHECK(cudaFree(scratch));
    unsigned long long t1 = now_ns();
    print_step("free-after-gemms", "cudaFree", t0, t1);

    t0 = now_ns();
    CUDA_CHECK(cudaMemcpy(host_c.data(), c, bytes, cudaMemcpyDeviceToHost));
    t1 = now_ns();
    print_step("copy-back", "cudaMemcpy", t0, t1);
    std::printf("c[0] = %.1f (expected %.1f)\n", host_c[0], 2.0f);

    CUBLAS_CHECK(cublasDestroy(handle));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    return 0;
}
