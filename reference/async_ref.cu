// async_ref.cu: an independent CUDA *runtime API* reference for async-lab.
//
// It measures, case by case, whether a CUDA runtime call blocks the calling host thread, with the same
// method async-lab uses through the driver API (blocker kernel, events, data-capture probe, class rule),
// so that the two tools' classes can be compared side by side. See README.md in this directory.
//
// Build (GPU machine):  nvcc -O2 -std=c++17 -arch=sm_90 -o async_ref async_ref.cu -lcuda
//   (-lcuda: `--overhead` also times the driver API's cuMemcpyHtoDAsync and cuLaunchKernel.)
// Syntax check (no CUDA toolkit):  g++ -std=c++17 -fsyntax-only -Wall -Wextra async_ref.cu
//   (-x c++ may be needed where g++ does not treat .cu as C++; the mock header below stands in for
//   cuda_runtime.h.)

#ifdef __CUDACC__
#include <cuda.h>  // the driver API, for --overhead (link with -lcuda)
#include <cuda_runtime.h>
#else
#include "mock/cuda_mock.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

typedef unsigned long long u64;

// ------------------------------------------------------------------------------------------------
// Data pattern and checksum: exactly the functions async-lab uses (host and device).
// ------------------------------------------------------------------------------------------------

__host__ __device__ __forceinline__ uint8_t pattern_byte(u64 i, uint32_t seed) {
    uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32);
    return (uint8_t)(((x + seed) * 0x9E3779B1u) >> 24);
}

__host__ __device__ __forceinline__ u64 checksum_term(u64 i, uint8_t b) {
    return (u64)(b + 1u) * (u64)(i % 1021ull + 1ull);
}

static const uint32_t SEED_A = 0x000A11CEu;      // the source data
static const uint32_t SEED_B = 0x0000B0B0u;      // the probe's overwrite
static const uint32_t SEED_POISON = 0x00C0FFEEu; // host destinations before the copy
static const size_t PROBE_BYTES = 4096;
static const unsigned char MEMSET_VALUE = 0x5A;

// ------------------------------------------------------------------------------------------------
// Kernels
// ------------------------------------------------------------------------------------------------

// The blocker: one thread spins on %globaltimer until `ns` nanoseconds have passed.
__global__ void spin_wait_ns(u64 ns, u64* stamps) {
#ifdef __CUDA_ARCH__
    u64 t0, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    now = t0;
    while (now - t0 < ns) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    }
    if (stamps != nullptr) {
        stamps[0] = t0;
        stamps[1] = now;
    }
#else
    (void)ns;
    (void)stamps;
#endif
}

__global__ void fill(unsigned char* dst, u64 len, unsigned int seed) {
    u64 stride = (u64)gridDim.x * (u64)blockDim.x;
    for (u64 i = (u64)blockIdx.x * (u64)blockDim.x + threadIdx.x; i < len; i += stride) {
        dst[i] = pattern_byte(i, seed);
    }
}

__global__ void checksum(const unsigned char* src, u64 len, u64* out) {
    u64 stride = (u64)gridDim.x * (u64)blockDim.x;
    u64 sum = 0;
    for (u64 i = (u64)blockIdx.x * (u64)blockDim.x + threadIdx.x; i < len; i += stride) {
        sum += checksum_term(i, src[i]);
    }
    atomicAdd(out, sum);
}

__global__ void empty_kernel() {}

static const unsigned int GRID_BLOCKS = 1024;
static const unsigned int BLOCK_THREADS = 256;

static cudaError_t launch_spin(u64 ns, u64* stamps, cudaStream_t s) {
    void* args[] = {&ns, &stamps};
    return cudaLaunchKernel((const void*)spin_wait_ns, dim3(1), dim3(1), args, 0, s);
}

static cudaError_t launch_fill(unsigned char* dst, u64 len, unsigned int seed, cudaStream_t s) {
    void* args[] = {&dst, &len, &seed};
    return cudaLaunchKernel((const void*)fill, dim3(GRID_BLOCKS), dim3(BLOCK_THREADS), args, 0, s);
}

static cudaError_t launch_checksum(const unsigned char* src, u64 len, u64* out, cudaStream_t s) {
    void* args[] = {&src, &len, &out};
    return cudaLaunchKernel((const void*)checksum, dim3(GRID_BLOCKS), dim3(BLOCK_THREADS), args,
                            0, s);
}

static cudaError_t launch_empty(cudaStream_t s) {
    void* args[1] = {nullptr};  // the kernel has no parameters; the array is never read
    return cudaLaunchKernel((const void*)empty_kernel, dim3(1), dim3(1), args, 0, s);
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

static std::string errstr(cudaError_t e) {
    const char* name = cudaGetErrorName(e);
    const char* text = cudaGetErrorString(e);
    return std::string(name ? name : "?") + " (" + (text ? text : "?") + ")";
}

#define CK(expr)                                                                                          \
    do {                                                                                                  \
        cudaError_t ck_e_ = (expr);                                                                       \
        if (ck_e_ != cudaSuccess)                                                                         \
            throw Failure(std::string(#expr) + " -> " + errstr(ck_e_) + " [line " + std::to_string(__LINE__) + \
                          "]");                                                                           \
    } while (0)

// ------------------------------------------------------------------------------------------------
// Case description
// ------------------------------------------------------------------------------------------------

enum class Kind { Copy, Memset, Launch, Alloc };
enum class Dir { HtoD, DtoH, DtoD, HtoH };
enum class Mem { Pageable, Pinned, Registered, WC, Managed, Device };
enum class StreamSel { None, NonBlocking, Blocking, Legacy, PerThread };
enum class BlockerSel { OpStream, OtherNonBlocking, Legacy };
enum class AllocOp {
    MemAlloc,
    MemFree,
    AllocHost,
    FreeHost,
    HostRegister,
    HostUnregister,
    AllocManaged,
    AllocAsync,
    FreeAsync
};

struct CaseDef {
    std::string id;
    Kind kind = Kind::Copy;
    bool async_form = true;  // copy/memset: *Async call or not
    Dir dir = Dir::HtoD;
    Mem mem = Mem::Device;
    StreamSel stream = StreamSel::None;  // the op's stream; None: the call takes no stream
    BlockerSel blocker = BlockerSel::OpStream;
    size_t bytes = 0;
    AllocOp aop = AllocOp::MemAlloc;
    bool warm_pool = false;

    // Ops with a stream are exactly the ops with device work of their own (events ev_o0/ev_o1).
    bool device_work() const { return stream != StreamSel::None; }
    bool blocker_ahead() const { return blocker == BlockerSel::OpStream; }
};

static const char* dir_name(Dir d) {
    switch (d) {
        case Dir::HtoD: return "htod";
        case Dir::DtoH: return "dtoh";
        case Dir::DtoD: return "dtod";
        case Dir::HtoH: return "htoh";
    }
    return "?";
}

static const char* mem_name(Mem m) {
    switch (m) {
        case Mem::Pageable: return "pageable";
        case Mem::Pinned: return "pinned";
        case Mem::Registered: return "registered";
        case Mem::WC: return "wc";
        case Mem::Managed: return "managed";
        case Mem::Device: return "device";
    }
    return "?";
}

static const char* stream_name(StreamSel s) {
    switch (s) {
        case StreamSel::None: return "none";
        case StreamSel::NonBlocking: return "nonblocking";
        case StreamSel::Blocking: return "blocking";
        case StreamSel::Legacy: return "legacy";
        case StreamSel::PerThread: return "per-thread";
    }
    return "?";
}

static const char* alloc_op_name(AllocOp a) {
    switch (a) {
        case AllocOp::MemAlloc: return "mem-alloc";
        case AllocOp::MemFree: return "mem-free";
        case AllocOp::AllocHost: return "alloc-host";
        case AllocOp::FreeHost: return "free-host";
        case AllocOp::HostRegister: return "host-register";
        case AllocOp::HostUnregister: return "host-unregister";
        case AllocOp::AllocManaged: return "alloc-managed";
        case AllocOp::AllocAsync: return "alloc-async";
        case AllocOp::FreeAsync: return "free-async";
    }
    return "?";
}

static std::string size_name(size_t n) {
    if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + "MiB";
    if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + "KiB";
    return std::to_string(n) + "B";
}

static const size_t KiB4 = 4096, KiB64 = 65536, MiB1 = 1u << 20, MiB256 = 256u << 20;
static const size_t ALL_SIZES[4] = {KiB4, KiB64, MiB1, MiB256};

static std::vector<CaseDef> build_cases() {
    std::vector<CaseDef> v;
    auto copy = [&](bool async_form, Dir d, Mem m, StreamSel s, bool same, size_t n) {
        CaseDef c;
        c.kind = Kind::Copy;
        c.async_form = async_form;
        c.dir = d;
        c.mem = m;
        c.stream = s;
        c.blocker = same ? BlockerSel::OpStream : BlockerSel::OtherNonBlocking;
        c.bytes = n;
        c.id = std::string("copy/") + (async_form ? "async" : "sync") + "/" + dir_name(d) + "/" + mem_name(m) + "/" +
               stream_name(s) + "/" + (same ? "same" : "other") + "/" + size_name(n);
        v.push_back(c);
    };
    const Mem host_kinds[5] = {Mem::Pageable, Mem::Pinned, Mem::Registered, Mem::WC, Mem::Managed};
    // 1. async htod/dtoh, every host memory kind, every size
    for (Dir d : {Dir::HtoD, Dir::DtoH})
        for (Mem m : host_kinds)
            for (size_t n : ALL_SIZES) copy(true, d, m, StreamSel::NonBlocking, true, n);
    // 2. async dtod
    for (size_t n : ALL_SIZES) copy(true, Dir::DtoD, Mem::Device, StreamSel::NonBlocking, true, n);
    // 3. async htoh
    for (Mem m : {Mem::Pageable, Mem::Pinned}) copy(true, Dir::HtoH, m, StreamSel::NonBlocking, true, MiB1);
    // 4. sync copies on the legacy default stream
    for (Dir d : {Dir::HtoD, Dir::DtoH})
        for (Mem m : {Mem::Pageable, Mem::Pinned})
            for (size_t n : ALL_SIZES) copy(false, d, m, StreamSel::Legacy, true, n);
    for (size_t n : {KiB64, MiB256}) copy(false, Dir::DtoD, Mem::Device, StreamSel::Legacy, true, n);
    copy(false, Dir::HtoH, Mem::Pageable, StreamSel::Legacy, true, MiB1);
    // 5. async copies on the other stream kinds
    for (StreamSel s : {StreamSel::Blocking, StreamSel::Legacy, StreamSel::PerThread}) {
        copy(true, Dir::HtoD, Mem::Pageable, s, true, MiB1);
        copy(true, Dir::HtoD, Mem::Pinned, s, true, MiB1);
        copy(true, Dir::DtoH, Mem::Pageable, s, true, MiB1);
    }
    // 6. blocker on another (non-blocking) stream
    copy(true, Dir::HtoD, Mem::Pageable, StreamSel::NonBlocking, false, MiB1);
    copy(true, Dir::DtoH, Mem::Pageable, StreamSel::NonBlocking, false, MiB1);
    copy(false, Dir::HtoD, Mem::Pageable, StreamSel::Legacy, false, MiB1);
    copy(false, Dir::DtoH, Mem::Pageable, StreamSel::Legacy, false, MiB1);
    copy(false, Dir::HtoD, Mem::Pinned, StreamSel::Legacy, false, MiB1);

    // Memset
    auto memset_case = [&](bool async_form, Mem m, StreamSel s, bool same) {
        CaseDef c;
        c.kind = Kind::Memset;
        c.async_form = async_form;
        c.mem = m;
        c.stream = s;
        c.blocker = same ? BlockerSel::OpStream : BlockerSel::OtherNonBlocking;
        c.bytes = MiB1;
        c.id = std::string("memset/") + (async_form ? "async" : "sync") + "/" + mem_name(m) + "/" + stream_name(s) +
               "/" + (same ? "same" : "other") + "/" + size_name(MiB1);
        v.push_back(c);
    };
    for (Mem m : {Mem::Device, Mem::Pinned, Mem::Managed}) memset_case(false, m, StreamSel::Legacy, true);
    for (Mem m : {Mem::Device, Mem::Pinned, Mem::Managed}) memset_case(true, m, StreamSel::NonBlocking, true);
    memset_case(false, Mem::Device, StreamSel::Legacy, false);

    // Launch
    {
        CaseDef c;
        c.kind = Kind::Launch;
        c.stream = StreamSel::NonBlocking;
        c.blocker = BlockerSel::OpStream;
        c.bytes = 0;
        c.id = "launch/warm/nonblocking/same";
        v.push_back(c);
    }

    // Allocation without a stream: blocker on the legacy stream or on a non-blocking stream
    for (AllocOp a : {AllocOp::MemAlloc, AllocOp::MemFree, AllocOp::AllocHost, AllocOp::FreeHost, AllocOp::HostRegister,
                      AllocOp::HostUnregister, AllocOp::AllocManaged}) {
        for (bool legacy : {true, false}) {
            CaseDef c;
            c.kind = Kind::Alloc;
            c.aop = a;
            c.stream = StreamSel::None;
            c.blocker = legacy ? BlockerSel::Legacy : BlockerSel::OtherNonBlocking;
            c.bytes = MiB1;
            c.id = std::string("alloc/") + alloc_op_name(a) + "/" + (legacy ? "legacy" : "nonblocking");
            v.push_back(c);
        }
    }
    // Stream-ordered allocation
    for (AllocOp a : {AllocOp::AllocAsync, AllocOp::FreeAsync}) {
        for (bool warm : {false, true}) {
            for (bool same : {true, false}) {
                CaseDef c;
                c.kind = Kind::Alloc;
                c.aop = a;
                c.warm_pool = warm;
                c.stream = StreamSel::NonBlocking;
                c.blocker = same ? BlockerSel::OpStream : BlockerSel::OtherNonBlocking;
                c.bytes = MiB1;
                c.id = std::string("alloc/") + alloc_op_name(a) + "/" + (warm ? "warm-pool" : "threshold-0") +
                       "/nonblocking/" + (same ? "same" : "other");
                v.push_back(c);
            }
        }
    }
    return v;
}

// ------------------------------------------------------------------------------------------------
// Global state
// ------------------------------------------------------------------------------------------------

struct Globals {
    int dev = 0;
    cudaStream_t s_nb = nullptr;        // "nonblocking": cudaStreamCreateWithFlags(cudaStreamNonBlocking)
    cudaStream_t s_blocking = nullptr;  // "blocking": cudaStreamCreate
    cudaStream_t s_other = nullptr;     // separate non-blocking stream for "other" blockers
    cudaStream_t s_util = nullptr;      // non-blocking stream for preparation / verification kernels
    cudaEvent_t ev_b0 = nullptr, ev_b1 = nullptr, ev_o0 = nullptr, ev_o1 = nullptr;
    u64* d_stamps = nullptr;  // blocker start/end stamps (device)
    u64* d_sum = nullptr;     // checksum accumulator (device)
    cudaMemPool_t pool = nullptr;
    bool pool_ok = false;
    std::string pool_error;
    bool explicit_kinds = false;
    // Host copies of the patterns, as long as the largest selected case.
    std::unique_ptr<uint8_t[]> gold_a, gold_poison, gold_b;
    size_t gold_len = 0;
    std::map<size_t, u64> sum_a, sum_probed;
};
static Globals g;

static cudaStream_t resolve_stream(StreamSel s) {
    switch (s) {
        case StreamSel::NonBlocking: return g.s_nb;
        case StreamSel::Blocking: return g.s_blocking;
        case StreamSel::Legacy: return cudaStreamLegacy;
        case StreamSel::PerThread: return cudaStreamPerThread;
        case StreamSel::None: return nullptr;
    }
    return nullptr;
}

static cudaStream_t resolve_blocker_stream(const CaseDef& c) {
    switch (c.blocker) {
        case BlockerSel::OpStream: return resolve_stream(c.stream);
        case BlockerSel::OtherNonBlocking: return g.s_other;
        case BlockerSel::Legacy: return cudaStreamLegacy;
    }
    return nullptr;
}

static u64 gpu_checksum(const unsigned char* p, size_t n) {
    u64 host_sum = 0;
    CK(cudaMemsetAsync(g.d_sum, 0, sizeof(u64), g.s_util));
    CK(launch_checksum(p, (u64)n, g.d_sum, g.s_util));
    CK(cudaMemcpyAsync(&host_sum, g.d_sum, sizeof(u64), cudaMemcpyDeviceToHost, g.s_util));
    CK(cudaStreamSynchronize(g.s_util));
    return host_sum;
}

static u64 expected_sum_a(size_t n) {
    auto it = g.sum_a.find(n);
    if (it == g.sum_a.end()) throw Failure("internal: no expected checksum for " + std::to_string(n) + " bytes");
    return it->second;
}

static u64 expected_sum_probed(size_t n) {
    auto it = g.sum_probed.find(n);
    if (it == g.sum_probed.end()) throw Failure("internal: no probed checksum for " + std::to_string(n) + " bytes");
    return it->second;
}

static std::string hex64(u64 v) {
    char b[32];
    snprintf(b, sizeof b, "0x%016llx", v);
    return b;
}

// ------------------------------------------------------------------------------------------------
// Buffers
// ------------------------------------------------------------------------------------------------

struct Buf {
    Mem kind = Mem::Device;
    unsigned char* p = nullptr;
    size_t len = 0;
    bool registered = false;

    Buf() = default;
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    ~Buf() { release_quietly(); }

    void alloc(Mem k, size_t n) {
        if (p != nullptr) throw Failure("internal: buffer allocated twice");
        kind = k;
        len = n;
        void* v = nullptr;
        switch (k) {
            case Mem::Pageable:
            case Mem::Registered: {
                size_t cap = (n + 4095) / 4096 * 4096;
                v = aligned_alloc(4096, cap);
                if (v == nullptr) throw Failure("aligned_alloc(" + std::to_string(cap) + ") failed");
                memset(v, 0, cap);  // touch every page
                p = static_cast<unsigned char*>(v);
                if (k == Mem::Registered) {
                    CK(cudaHostRegister(v, cap, cudaHostRegisterDefault));
                    registered = true;
                }
                break;
            }
            case Mem::Pinned:
                CK(cudaMallocHost(&v, n));
                p = static_cast<unsigned char*>(v);
                break;
            case Mem::WC:
                CK(cudaHostAlloc(&v, n, cudaHostAllocWriteCombined));
                p = static_cast<unsigned char*>(v);
                break;
            case Mem::Managed:
                CK(cudaMallocManaged(&v, n, cudaMemAttachGlobal));
                p = static_cast<unsigned char*>(v);
                break;
            case Mem::Device:
                CK(cudaMalloc(&v, n));
                p = static_cast<unsigned char*>(v);
                break;
        }
    }

    // Frees the buffer; returns the first CUDA error (the buffer is forgotten either way).
    cudaError_t release() {
        cudaError_t first = cudaSuccess;
        if (p == nullptr) return first;
        switch (kind) {
            case Mem::Pageable:
            case Mem::Registered:
                if (registered) first = cudaHostUnregister(p);
                free(p);
                break;
            case Mem::Pinned:
            case Mem::WC: first = cudaFreeHost(p); break;
            case Mem::Managed:
            case Mem::Device: first = cudaFree(p); break;
        }
        p = nullptr;
        registered = false;
        return first;
    }
    void release_checked() { CK(release()); }
    void release_quietly() { (void)release(); }
    bool host_side() const { return kind != Mem::Device; }
};

// ------------------------------------------------------------------------------------------------
// Runners: one per case kind. The framework (run_rep) does the events, timing, queries and classes.
// ------------------------------------------------------------------------------------------------

struct Runner {
    const CaseDef& c;
    cudaStream_t st;  // the op's stream (nullptr when the call takes none)
    explicit Runner(const CaseDef& cd) : c(cd), st(resolve_stream(cd.stream)) {}
    virtual ~Runner() {}
    virtual void setup() {}
    virtual void prepare() {}        // step 1, before cudaDeviceSynchronize
    virtual cudaError_t call() = 0;  // the call under test: nothing else
    // The runtime function call() goes through, one per case (the JSON's "call").
    virtual const char* call_name() const = 0;
    virtual bool can_probe() const { return false; }
    virtual void probe() {}
    // After cudaDeviceSynchronize. Returns data_captured: 1 true, 0 false, -1 null. Throws on wrong data.
    virtual int verify(bool probed) {
        (void)probed;
        return -1;
    }
    virtual void after_rep() {}  // frees what call() created
    virtual void teardown() {}
};

static cudaMemcpyKind copy_kind(Dir d) {
    if (!g.explicit_kinds) return cudaMemcpyDefault;
    switch (d) {
        case Dir::HtoD: return cudaMemcpyHostToDevice;
        case Dir::DtoH: return cudaMemcpyDeviceToHost;
        case Dir::DtoD: return cudaMemcpyDeviceToDevice;
        case Dir::HtoH: return cudaMemcpyHostToHost;
    }
    return cudaMemcpyDefault;
}

struct CopyRunner : Runner {
    Buf src, dst;
    cudaMemcpyKind kind;
    size_t n;
    explicit CopyRunner(const CaseDef& cd) : Runner(cd), kind(copy_kind(cd.dir)), n(cd.bytes) {}

    void setup() override {
        Mem sk = (c.dir == Dir::HtoD || c.dir == Dir::HtoH) ? c.mem : Mem::Device;
        Mem dk = (c.dir == Dir::DtoH || c.dir == Dir::HtoH) ? c.mem : Mem::Device;
        src.alloc(sk, n);
        dst.alloc(dk, n);
    }
    void prepare() override {
        if (src.host_side())
            memcpy(src.p, g.gold_a.get(), n);  // = the host loop writing pattern_byte(i, SEED_A)
        else
            CK(launch_fill(src.p, (u64)n, SEED_A, g.s_util));
        if (dst.host_side())
            memcpy(dst.p, g.gold_poison.get(), n);
        else
            CK(cudaMemset(dst.p, 0, n));
    }
    cudaError_t call() override {
        if (c.async_form) return cudaMemcpyAsync(dst.p, src.p, n, kind, st);
        return cudaMemcpy(dst.p, src.p, n, kind);
    }
    const char* call_name() const override { return c.async_form ? "cudaMemcpyAsync" : "cudaMemcpy"; }
    bool can_probe() const override { return src.host_side(); }
    void probe() override { memcpy(src.p, g.gold_b.get(), std::min(PROBE_BYTES, n)); }

    int verify(bool probed) override {
        const size_t k = std::min(PROBE_BYTES, n);
        switch (c.dir) {
            case Dir::HtoD: {
                u64 s = gpu_checksum(dst.p, n);
                // The original arriving says something about staging only if the source was overwritten.
                if (s == expected_sum_a(n)) return probed ? 1 : -1;
                if (probed && s == expected_sum_probed(n)) return 0;
                throw Failure("verify: htod destination checksum " + hex64(s) + " matches neither the source (" +
                              hex64(expected_sum_a(n)) + ")" +
                              (probed ? " nor the probed source (" + hex64(expected_sum_probed(n)) + ")" : ""));
            }
            case Dir::DtoD: {
                u64 s = gpu_checksum(dst.p, n);
                if (s == expected_sum_a(n)) return -1;
                throw Failure("verify: dtod destination checksum " + hex64(s) + " != expected " +
                              hex64(expected_sum_a(n)));
            }
            case Dir::DtoH: {
                if (dst.kind == Mem::WC) {
                    // Host reads of write-combined memory are uncached (very slow for 256 MiB): let the GPU
                    // read it instead (pinned memory is device-accessible under unified addressing).
                    u64 s = gpu_checksum(dst.p, n);
                    if (s == expected_sum_a(n)) return -1;
                    throw Failure("verify: dtoh wc destination checksum " + hex64(s) + " != expected " +
                                  hex64(expected_sum_a(n)));
                }
                if (memcmp(dst.p, g.gold_a.get(), n) == 0) return -1;
                throw Failure("verify: dtoh destination differs from the device source");
            }
            case Dir::HtoH: {
                if (memcmp(dst.p, g.gold_a.get(), n) == 0) return probed ? 1 : -1;
                if (probed && memcmp(dst.p, g.gold_b.get(), k) == 0 &&
                    memcmp(dst.p + k, g.gold_a.get() + k, n - k) == 0)
                    return 0;
                throw Failure(std::string("verify: htoh destination matches neither the source") +
                              (probed ? " nor the probed source" : ""));
            }
        }
        return -1;
    }
    void teardown() override {
        src.release_checked();
        dst.release_checked();
    }
};

struct MemsetRunner : Runner {
    Buf buf;
    size_t n;
    std::vector<unsigned char> readback;
    explicit MemsetRunner(const CaseDef& cd) : Runner(cd), n(cd.bytes) {}

    void setup() override {
        buf.alloc(c.mem, n);
        if (!buf.host_side()) readback.resize(n);
    }
    void prepare() override {
        if (buf.host_side())
            memcpy(buf.p, g.gold_poison.get(), n);
        else
            CK(cudaMemset(buf.p, 0, n));
    }
    cudaError_t call() override {
        if (c.async_form) return cudaMemsetAsync(buf.p, MEMSET_VALUE, n, st);
        return cudaMemset(buf.p, MEMSET_VALUE, n);
    }
    const char* call_name() const override { return c.async_form ? "cudaMemsetAsync" : "cudaMemset"; }
    int verify(bool) override {
        const unsigned char* h = buf.p;
        if (!buf.host_side()) {
            CK(cudaMemcpy(readback.data(), buf.p, n, cudaMemcpyDeviceToHost));
            h = readback.data();
        }
        for (size_t i = 0; i < n; ++i)
            if (h[i] != MEMSET_VALUE)
                throw Failure("verify: memset byte " + std::to_string(i) + " is " + std::to_string(h[i]) +
                              ", expected " + std::to_string(MEMSET_VALUE));
        return -1;
    }
    void teardown() override { buf.release_checked(); }
};

struct LaunchRunner : Runner {
    explicit LaunchRunner(const CaseDef& cd) : Runner(cd) {}
    void setup() override {
        CK(launch_empty(st));  // the warm-up launch
        CK(cudaDeviceSynchronize());
    }
    cudaError_t call() override { return launch_empty(st); }
    const char* call_name() const override { return "cudaLaunchKernel"; }  // of empty_kernel
};

struct AllocRunner : Runner {
    size_t n;
    void* p = nullptr;        // what the call allocated, or what it is to free
    Buf pageable;             // host-register / host-unregister
    bool registered = false;  // pageable is registered
    bool pool_set = false;
    explicit AllocRunner(const CaseDef& cd) : Runner(cd), n(cd.bytes) {}

    void set_threshold(u64 v) {
        CK(cudaMemPoolSetAttribute(g.pool, cudaMemPoolAttrReleaseThreshold, &v));
    }

    void setup() override {
        switch (c.aop) {
            case AllocOp::HostRegister:
            case AllocOp::HostUnregister: pageable.alloc(Mem::Pageable, n); break;
            case AllocOp::AllocAsync:
            case AllocOp::FreeAsync:
                if (!g.pool_ok) throw Failure("default mem pool unavailable: " + g.pool_error);
                pool_set = true;
                set_threshold(c.warm_pool ? UINT64_MAX : 0);
                break;
            default: break;
        }
    }
    void prepare() override {
        switch (c.aop) {
            case AllocOp::MemFree: CK(cudaMalloc(&p, n)); break;
            case AllocOp::FreeHost: CK(cudaMallocHost(&p, n)); break;
            case AllocOp::HostUnregister:
                CK(cudaHostRegister(pageable.p, n, cudaHostRegisterDefault));
                registered = true;
                break;
            case AllocOp::FreeAsync: CK(cudaMallocAsync(&p, n, st)); break;  // completed by the sync in step 1
            default: break;
        }
    }
    cudaError_t call() override {
        cudaError_t e = cudaSuccess;
        switch (c.aop) {
            case AllocOp::MemAlloc: return cudaMalloc(&p, n);
            case AllocOp::MemFree:
                e = cudaFree(p);
                if (e == cudaSuccess) p = nullptr;
                return e;
            case AllocOp::AllocHost: return cudaMallocHost(&p, n);
            case AllocOp::FreeHost:
                e = cudaFreeHost(p);
                if (e == cudaSuccess) p = nullptr;
                return e;
            case AllocOp::HostRegister:
                e = cudaHostRegister(pageable.p, n, cudaHostRegisterDefault);
                if (e == cudaSuccess) registered = true;
                return e;
            case AllocOp::HostUnregister:
                e = cudaHostUnregister(pageable.p);
                if (e == cudaSuccess) registered = false;
                return e;
            case AllocOp::AllocManaged: return cudaMallocManaged(&p, n, cudaMemAttachGlobal);
            case AllocOp::AllocAsync: return cudaMallocAsync(&p, n, st);
            case AllocOp::FreeAsync:
                e = cudaFreeAsync(p, st);
                if (e == cudaSuccess) p = nullptr;
                return e;
        }
        return cudaErrorInvalidValue;
    }
    const char* call_name() const override {
        switch (c.aop) {
            case AllocOp::MemAlloc: return "cudaMalloc";
            case AllocOp::MemFree: return "cudaFree";
            case AllocOp::AllocHost: return "cudaMallocHost";
            case AllocOp::FreeHost: return "cudaFreeHost";
            case AllocOp::HostRegister: return "cudaHostRegister";
            case AllocOp::HostUnregister: return "cudaHostUnregister";
            case AllocOp::AllocManaged: return "cudaMallocManaged";
            case AllocOp::AllocAsync: return "cudaMallocAsync";
            case AllocOp::FreeAsync: return "cudaFreeAsync";
        }
        return "?";
    }
    // Frees whatever is still held. Used after each repetition and at teardown.
    void release_all() {
        if (p != nullptr) {
            void* q = p;
            p = nullptr;
            switch (c.aop) {
                case AllocOp::AllocHost:
                case AllocOp::FreeHost: CK(cudaFreeHost(q)); break;
                case AllocOp::AllocAsync:
                case AllocOp::FreeAsync:
                    CK(cudaFreeAsync(q, st));
                    CK(cudaStreamSynchronize(st));
                    break;
                default: CK(cudaFree(q)); break;
            }
        }
        if (registered) {
            registered = false;
            CK(cudaHostUnregister(pageable.p));
        }
    }
    void after_rep() override { release_all(); }
    void teardown() override {
        std::string first_error;
        try {
            release_all();
        } catch (const std::exception& e) {
            first_error = e.what();
        }
        cudaError_t e = pageable.release();
        if (e != cudaSuccess && first_error.empty()) first_error = "free pageable -> " + errstr(e);
        if (pool_set) {
            pool_set = false;
            u64 zero = 0;
            e = cudaMemPoolSetAttribute(g.pool, cudaMemPoolAttrReleaseThreshold, &zero);
            if (e != cudaSuccess && first_error.empty()) first_error = "reset release threshold -> " + errstr(e);
            e = cudaMemPoolTrimTo(g.pool, 0);
            if (e != cudaSuccess && first_error.empty()) first_error = "cudaMemPoolTrimTo -> " + errstr(e);
        }
        if (!first_error.empty()) throw Failure(first_error);
    }
};

static std::unique_ptr<Runner> make_runner(const CaseDef& c) {
    switch (c.kind) {
        case Kind::Copy: return std::unique_ptr<Runner>(new CopyRunner(c));
        case Kind::Memset: return std::unique_ptr<Runner>(new MemsetRunner(c));
        case Kind::Launch: return std::unique_ptr<Runner>(new LaunchRunner(c));
        case Kind::Alloc: return std::unique_ptr<Runner>(new AllocRunner(c));
    }
    throw Failure("internal: unknown case kind");
}

// ------------------------------------------------------------------------------------------------
// One repetition
// ------------------------------------------------------------------------------------------------

struct Rep {
    double wall_us = 0, cpu_us = 0;
    // The call's start and length on CLOCK_MONOTONIC, in ns: where a trace of this run finds it.
    u64 start_ns = 0, call_ns = 0;
    double op_us = NAN, blocker_us = NAN;
    bool blocker_done = false;
    int op_done = -1;   // 1 true, 0 false, -1 null
    int captured = -1;  // 1 true, 0 false, -1 null
    std::string cls;
};

static const char* classify(bool blocker_done, bool blocker_ahead, int op_done, int captured) {
    if (blocker_done) {
        if (!blocker_ahead) return "device-sync";
        return op_done == 0 ? "waited-then-staged" : "blocking";
    }
    if (op_done == 1) return "blocking";
    return captured == 1 ? "staged" : "async";
}

static double ts_us(const timespec& t) { return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3; }
static u64 ts_ns(const timespec& t) { return (u64)t.tv_sec * 1000000000ull + (u64)t.tv_nsec; }

static void check_query(cudaError_t q, const char* what) {
    if (q != cudaSuccess && q != cudaErrorNotReady) throw Failure(std::string(what) + " -> " + errstr(q));
}

static Rep run_rep(Runner& r, bool with_blocker, u64 blocker_ns) {
    const CaseDef& c = r.c;
    const bool dw = c.device_work();
    cudaStream_t os = r.st;
    cudaStream_t bs = resolve_blocker_stream(c);
    Rep out;

    // 1. preparation, outside timing
    r.prepare();
    CK(cudaDeviceSynchronize());

    // 2. blocker, then the op's start event
    if (with_blocker) {
        CK(cudaEventRecord(g.ev_b0, bs));
        CK(launch_spin(blocker_ns, g.d_stamps, bs));
        CK(cudaEventRecord(g.ev_b1, bs));
    }
    if (dw) CK(cudaEventRecord(g.ev_o0, os));

    // 3. the call under test, timed on CLOCK_MONOTONIC (a trace of this run finds the call by its start)
    timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    cudaError_t call_err = r.call();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);

    // 4. signals, immediately
    // The op's own state comes from a stream query made before anything else is enqueued: an event
    // recorded after the return is not complete until the GPU has processed it, a few microseconds later,
    // even when the op itself had already finished.
    cudaError_t rec_err = cudaSuccess, qb = cudaSuccess, qo = cudaErrorNotReady;
    if (dw) qo = cudaStreamQuery(os);
    if (dw) rec_err = cudaEventRecord(g.ev_o1, os);
    if (with_blocker) qb = cudaEventQuery(g.ev_b1);
    out.blocker_done = with_blocker ? (qb == cudaSuccess) : false;
    out.op_done = dw ? (qo == cudaSuccess ? 1 : 0) : -1;

    // 5. data-capture probe (host-source copies whose op has not completed)
    bool probed = false;
    // Only while the blocker ahead still runs has the copy certainly not started reading the source.
    if (call_err == cudaSuccess && rec_err == cudaSuccess && r.can_probe() && out.op_done == 0 &&
        with_blocker && c.blocker_ahead() && !out.blocker_done) {
        r.probe();
        probed = true;
    }

    if (call_err != cudaSuccess)
        throw Failure(std::string("the call under test, ") + r.call_name() + " -> " + errstr(call_err));
    if (rec_err != cudaSuccess) throw Failure("cudaEventRecord(ev_o1) -> " + errstr(rec_err));
    if (with_blocker) check_query(qb, "cudaEventQuery(ev_b1)");
    if (dw) check_query(qo, "cudaStreamQuery(op stream)");

    // 6. drain; device times
    CK(cudaDeviceSynchronize());
    out.start_ns = ts_ns(t0);
    out.call_ns = ts_ns(t1) - ts_ns(t0);
    out.wall_us = (double)out.call_ns / 1e3;
    out.cpu_us = ts_us(c1) - ts_us(c0);
    float ms = 0;
    if (with_blocker) {
        CK(cudaEventElapsedTime(&ms, g.ev_b0, g.ev_b1));
        out.blocker_us = (double)ms * 1000.0;
    }
    if (dw) {
        CK(cudaEventElapsedTime(&ms, g.ev_o0, g.ev_o1));
        out.op_us = (double)ms * 1000.0;
    }

    // 7. verify, then free what the call created
    out.captured = r.verify(probed);
    r.after_rep();

    if (with_blocker) out.cls = classify(out.blocker_done, c.blocker_ahead(), out.op_done, out.captured);
    return out;
}

// ------------------------------------------------------------------------------------------------
// One case
// ------------------------------------------------------------------------------------------------

struct CaseResult {
    const CaseDef* def = nullptr;
    std::string call;  // the runtime function of the timed call; empty: null (the case failed before)
    std::vector<Rep> reps;
    double warmup_us = NAN;
    u64 blocker_ns = 0;
    std::string cls;  // empty: null
    bool has_error = false;
    std::string error;
};

static double median_of(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

static std::string majority_class(const std::vector<Rep>& reps) {
    // Most frequent class; a tie goes to the class that first appeared earliest.
    std::string best;
    int best_count = 0;
    for (size_t i = 0; i < reps.size(); ++i) {
        int count = 0;
        for (const Rep& r : reps) count += (r.cls == reps[i].cls);
        if (count > best_count) {
            best = reps[i].cls;
            best_count = count;
        }
    }
    return best;
}

static CaseResult run_case(const CaseDef& c, int nreps) {
    CaseResult res;
    res.def = &c;
    std::unique_ptr<Runner> r;
    try {
        r = make_runner(c);
        res.call = r->call_name();
        r->setup();
        // Warm-up repetition without a blocker: W = call wall time + op device time.
        Rep w = run_rep(*r, false, 0);
        res.warmup_us = w.wall_us + (std::isnan(w.op_us) ? 0.0 : w.op_us);
        double ns = 3.0 * res.warmup_us * 1000.0;
        ns = std::min(std::max(ns, 20e6), 2e9);
        res.blocker_ns = (u64)ns;
        for (int i = 0; i < nreps; ++i) res.reps.push_back(run_rep(*r, true, res.blocker_ns));
        r->teardown();
        res.cls = majority_class(res.reps);
    } catch (const std::exception& e) {
        res.has_error = true;
        res.error = e.what();
        cudaError_t s = cudaDeviceSynchronize();
        if (s != cudaSuccess) res.error += "; then cudaDeviceSynchronize -> " + errstr(s);
        (void)cudaGetLastError();  // clear a non-sticky error so that later cases start clean
        if (r) {
            try {
                r->teardown();
            } catch (const std::exception& e2) {
                res.error += "; teardown: " + std::string(e2.what());
            }
        }
    }
    return res;
}

// ------------------------------------------------------------------------------------------------
// Output
// ------------------------------------------------------------------------------------------------

static std::string json_str(const std::string& s) {
    std::string o = "\"";
    for (unsigned char ch : s) {
        switch (ch) {
            case '"': o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n"; break;
            case '\r': o += "\\r"; break;
            case '\t': o += "\\t"; break;
            default:
                if (ch < 0x20) {
                    char b[8];
                    snprintf(b, sizeof b, "\\u%04x", ch);
                    o += b;
                } else {
                    o += (char)ch;
                }
        }
    }
    return o + "\"";
}

static std::string json_num(double v) {
    if (std::isnan(v) || std::isinf(v)) return "null";
    char b[64];
    snprintf(b, sizeof b, "%.3f", v);
    return b;
}

static std::string json_tri(int v) { return v < 0 ? "null" : (v ? "true" : "false"); }

static std::string case_json(const CaseResult& r) {
    const CaseDef& c = *r.def;
    std::vector<double> wall, cpu, op, blk;
    for (const Rep& x : r.reps) {
        wall.push_back(x.wall_us);
        cpu.push_back(x.cpu_us);
        op.push_back(x.op_us);
        blk.push_back(x.blocker_us);
    }
    std::string o = "{";
    o += "\"id\":" + json_str(c.id);
    o += ",\"call\":" + (r.call.empty() ? std::string("null") : json_str(r.call));
    o += ",\"class\":" + (r.has_error || r.cls.empty() ? std::string("null") : json_str(r.cls));
    o += ",\"classes\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + json_str(r.reps[i].cls);
    o += "]";
    double mn = NAN, mx = NAN;
    if (!wall.empty()) {
        mn = *std::min_element(wall.begin(), wall.end());
        mx = *std::max_element(wall.begin(), wall.end());
    }
    o += ",\"host_call_us\":{\"median\":" + json_num(median_of(wall)) + ",\"min\":" + json_num(mn) +
         ",\"max\":" + json_num(mx) + ",\"n\":" + std::to_string(wall.size()) + "}";
    o += ",\"host_cpu_us\":" + json_num(median_of(cpu));
    o += ",\"device_us\":" + (c.device_work() ? json_num(median_of(op)) : std::string("null"));
    o += ",\"blocker_us\":" + json_num(median_of(blk));
    o += ",\"blocker_ns\":" + std::to_string(r.blocker_ns);
    o += ",\"bytes\":" + std::to_string(c.bytes);
    o += ",\"data_captured\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + json_tri(r.reps[i].captured);
    o += "]";
    o += ",\"error\":" + (r.has_error ? json_str(r.error) : std::string("null"));
    // Extras (not in async-lab's minimal schema, useful when the two disagree):
    o += ",\"warmup_us\":" + json_num(r.warmup_us);
    o += ",\"blocker_ahead\":" + std::string(c.blocker_ahead() ? "true" : "false");
    o += ",\"blocker_done\":[";
    for (size_t i = 0; i < r.reps.size(); ++i)
        o += (i ? "," : "") + std::string(r.reps[i].blocker_done ? "true" : "false");
    o += "],\"op_done\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + json_tri(r.reps[i].op_done);
    o += "],\"host_call_us_reps\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + json_num(r.reps[i].wall_us);
    o += "],\"host_call_start_ns\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + std::to_string(r.reps[i].start_ns);
    o += "],\"host_call_ns\":[";
    for (size_t i = 0; i < r.reps.size(); ++i) o += (i ? "," : "") + std::to_string(r.reps[i].call_ns);
    o += "]}";
    return o;
}

static std::string fmt_cell(double v, double scale, int width) {
    char b[64];
    if (std::isnan(v))
        snprintf(b, sizeof b, "%*s", width, "-");
    else
        snprintf(b, sizeof b, "%*.1f", width, v * scale);
    return b;
}

static void print_row(const CaseResult& r) {
    std::vector<double> wall, op, blk;
    for (const Rep& x : r.reps) {
        wall.push_back(x.wall_us);
        op.push_back(x.op_us);
        blk.push_back(x.blocker_us);
    }
    std::string classes;
    for (const Rep& x : r.reps) classes += (classes.empty() ? "" : ",") + x.cls;
    fprintf(stderr, "%-52s %-18s call %s us  dev %s us  blocker %s ms  [%s]%s%s\n", r.def->id.c_str(),
            r.has_error ? "ERROR" : r.cls.c_str(), fmt_cell(median_of(wall), 1.0, 11).c_str(),
            fmt_cell(median_of(op), 1.0, 10).c_str(), fmt_cell(median_of(blk), 1e-3, 8).c_str(), classes.c_str(),
            r.has_error ? "  " : "", r.has_error ? r.error.c_str() : "");
    fflush(stderr);
}

// ------------------------------------------------------------------------------------------------
// Setup
// ------------------------------------------------------------------------------------------------

static void prepare_golden(const std::vector<const CaseDef*>& selected) {
    size_t max_len = PROBE_BYTES;
    std::set<size_t> copy_sizes;
    for (const CaseDef* c : selected) {
        max_len = std::max(max_len, c->bytes);
        if (c->kind == Kind::Copy) copy_sizes.insert(c->bytes);
    }
    g.gold_len = max_len;
    g.gold_a.reset(new uint8_t[max_len]);
    g.gold_poison.reset(new uint8_t[max_len]);
    g.gold_b.reset(new uint8_t[PROBE_BYTES]);
    for (size_t i = 0; i < max_len; ++i) {
        g.gold_a[i] = pattern_byte(i, SEED_A);
        g.gold_poison[i] = pattern_byte(i, SEED_POISON);
    }
    for (size_t i = 0; i < PROBE_BYTES; ++i) g.gold_b[i] = pattern_byte(i, SEED_B);

    // Expected checksums for every copy size, in one pass.
    u64 sum = 0;
    size_t i = 0;
    for (size_t n : copy_sizes) {  // ascending
        for (; i < n; ++i) sum += checksum_term(i, g.gold_a[i]);
        g.sum_a[n] = sum;
        size_t k = std::min(PROBE_BYTES, n);
        u64 probed = sum;
        for (size_t j = 0; j < k; ++j) probed = probed - checksum_term(j, g.gold_a[j]) + checksum_term(j, g.gold_b[j]);
        g.sum_probed[n] = probed;
        if (probed == sum) fprintf(stderr, "warning: probed and unprobed checksums coincide for %zu bytes\n", n);
    }
}

static void setup_device(std::string& gpu_name, int& driver_version, int& runtime_version) {
    int count = 0;
    CK(cudaGetDeviceCount(&count));
    if (count < 1) throw Failure("no CUDA device");
    g.dev = 0;
    CK(cudaSetDevice(g.dev));
    CK(cudaFree(nullptr));  // create the primary context now
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    CK(cudaGetDeviceProperties(&prop, g.dev));
    gpu_name = prop.name;
    CK(cudaDriverGetVersion(&driver_version));
    CK(cudaRuntimeGetVersion(&runtime_version));

    CK(cudaStreamCreateWithFlags(&g.s_nb, cudaStreamNonBlocking));
    CK(cudaStreamCreate(&g.s_blocking));
    CK(cudaStreamCreateWithFlags(&g.s_other, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&g.s_util, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g.ev_b0));
    CK(cudaEventCreate(&g.ev_b1));
    CK(cudaEventCreate(&g.ev_o0));
    CK(cudaEventCreate(&g.ev_o1));
    void* v = nullptr;
    CK(cudaMalloc(&v, 2 * sizeof(u64)));
    g.d_stamps = static_cast<u64*>(v);
    v = nullptr;
    CK(cudaMalloc(&v, sizeof(u64)));
    g.d_sum = static_cast<u64*>(v);

    cudaError_t e = cudaDeviceGetDefaultMemPool(&g.pool, g.dev);
    g.pool_ok = (e == cudaSuccess);
    if (!g.pool_ok) g.pool_error = errstr(e);

    // Load every kernel now (lazy loading would otherwise charge the first case).
    CK(launch_spin(1000, g.d_stamps, g.s_util));
    CK(launch_fill(reinterpret_cast<unsigned char*>(g.d_stamps), 2 * sizeof(u64), SEED_A, g.s_util));
    CK(launch_checksum(reinterpret_cast<const unsigned char*>(g.d_stamps), 2 * sizeof(u64), g.d_sum, g.s_util));
    CK(launch_empty(g.s_util));
    CK(cudaDeviceSynchronize());
}

static int device_attr(cudaDeviceAttr a) {
    int v = -1;
    if (cudaDeviceGetAttribute(&v, a, g.dev) != cudaSuccess) return -1;
    return v;
}

// ------------------------------------------------------------------------------------------------
// --overhead: the host cost of enqueueing the cheapest calls, to benchmark async-lab against
// (`async-lab --preset overhead` times the same calls the same way; its ids are the same).
//
// Per case, on the non-blocking stream g.s_nb: one untimed call and a synchronize; a warm-up round (times
// thrown away); the measured round: a 200 ms blocker (spin_wait_ns between two events), then
// OVERHEAD_ENQUEUES calls, each timed alone with std::chrono::steady_clock, then cudaDeviceSynchronize.
// The blocker's end event is queried once, after the last call: if the blocker had already finished, the
// calls were not all behind running work, and the case records an error (its times are kept).
// ------------------------------------------------------------------------------------------------

static const int OVERHEAD_ENQUEUES = 500;
static const u64 OVERHEAD_BLOCKER_NS = 200000000ull;
static const size_t OVERHEAD_COPY_BYTES = 4;
static const unsigned char OVERHEAD_PATTERN[OVERHEAD_COPY_BYTES] = {0xA5, 0x11, 0xCE, 0x5A};

enum class Api { Runtime, Driver };

struct OverheadResult {
    std::string id;
    Api api = Api::Driver;
    std::string call;
    std::vector<double> us;  // the measured round's per-call wall times
    bool blocker_running_at_end = false;
    bool has_error = false;
    std::string error;
};

// The value at percentile p (0..100) of an ascending vector, interpolating linearly between the two nearest
// ranks (rank p/100 * (n-1)); exactly async-lab's `overhead::percentile`. NAN when empty.
static double percentile_sorted(const std::vector<double>& v, double p) {
    if (v.empty()) return NAN;
    double rank = std::min(std::max(p / 100.0, 0.0), 1.0) * (double)(v.size() - 1);
    size_t lo = (size_t)std::floor(rank), hi = (size_t)std::ceil(rank);
    return v[lo] + (v[hi] - v[lo]) * (rank - (double)lo);
}

static std::string api_error(Api api, int code) {
    if (api == Api::Runtime) return errstr((cudaError_t)code);
    const char* name = nullptr;
    if (cuGetErrorName((CUresult)code, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
    return std::string(name) + " (CUresult " + std::to_string(code) + ")";
}

// One round: the blocker, then OVERHEAD_ENQUEUES calls of `call` (returns 0 or an error code of `api`),
// each timed alone. `call` is a lambda, inlined here: nothing but the two clock reads surrounds it.
template <class F>
static std::vector<double> overhead_round(F& call, Api api, const std::string& what, bool& running_at_end) {
    std::vector<double> us;
    us.reserve(OVERHEAD_ENQUEUES);
    CK(cudaEventRecord(g.ev_b0, g.s_nb));
    CK(launch_spin(OVERHEAD_BLOCKER_NS, g.d_stamps, g.s_nb));
    CK(cudaEventRecord(g.ev_b1, g.s_nb));
    for (int i = 0; i < OVERHEAD_ENQUEUES; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        int rc = call();
        auto t1 = std::chrono::steady_clock::now();
        if (rc != 0) throw Failure(what + " #" + std::to_string(i) + " -> " + api_error(api, rc));
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    cudaError_t q = cudaEventQuery(g.ev_b1);
    if (q != cudaSuccess && q != cudaErrorNotReady) CK(q);
    running_at_end = (q == cudaErrorNotReady);
    CK(cudaDeviceSynchronize());
    return us;
}

template <class F>
static OverheadResult overhead_case(const std::string& id, Api api, const std::string& call_name, F call) {
    OverheadResult r;
    r.id = id;
    r.api = api;
    r.call = call_name;
    try {
        int rc = call();
        if (rc != 0) throw Failure(call_name + " (untimed first call) -> " + api_error(api, rc));
        CK(cudaDeviceSynchronize());
        bool running = false;
        overhead_round(call, api, call_name + " (warm-up round)", running);
        r.us = overhead_round(call, api, call_name, running);
        r.blocker_running_at_end = running;
        if (!running) {
            r.has_error = true;
            r.error = "the 200 ms blocker had finished before the last of the " + std::to_string(OVERHEAD_ENQUEUES) +
                      " calls returned: they were not all enqueued behind running work (the times are kept)";
        }
    } catch (const std::exception& e) {
        r.has_error = true;
        r.error = e.what();
        cudaError_t s = cudaDeviceSynchronize();
        if (s != cudaSuccess) r.error += "; then cudaDeviceSynchronize -> " + errstr(s);
        (void)cudaGetLastError();
    }
    return r;
}

static const char* OVERHEAD_IDS[4] = {
    "overhead/memcpy-htod-async/pinned/4B",
    "runtime/overhead/memcpy-htod-async/pinned/4B",
    "overhead/launch/empty",
    "runtime/overhead/launch/empty",
};

static std::string overhead_json(const OverheadResult& r) {
    std::vector<double> sorted = r.us;
    std::sort(sorted.begin(), sorted.end());
    std::string o = "{\"id\":" + json_str(r.id);
    o += ",\"api\":" + std::string(r.api == Api::Driver ? "\"driver\"" : "\"runtime\"");
    o += ",\"call\":" + json_str(r.call);
    o += ",\"median_us\":" + json_num(percentile_sorted(sorted, 50.0));
    o += ",\"p10_us\":" + json_num(percentile_sorted(sorted, 10.0));
    o += ",\"p90_us\":" + json_num(percentile_sorted(sorted, 90.0));
    o += ",\"n\":" + std::to_string(r.us.size());
    o += ",\"blocker_running_at_end\":" + std::string(r.blocker_running_at_end ? "true" : "false");
    o += ",\"error\":" + (r.has_error ? json_str(r.error) : std::string("null"));
    o += ",\"host_call_us_reps\":[";
    for (size_t i = 0; i < r.us.size(); ++i) o += (i ? "," : "") + json_num(r.us[i]);
    o += "]}";
    return o;
}

// Runs the four cases (after setup_device) and writes the JSON to `out`.
static void run_overhead(FILE* out, const std::string& gpu_name, int driver_version, int runtime_version) {
    void* h = nullptr;
    void* d = nullptr;
    CK(cudaMallocHost(&h, OVERHEAD_COPY_BYTES));
    CK(cudaMalloc(&d, OVERHEAD_COPY_BYTES));
    memcpy(h, OVERHEAD_PATTERN, OVERHEAD_COPY_BYTES);
    CK(cudaMemset(d, 0, OVERHEAD_COPY_BYTES));
    CK(cudaDeviceSynchronize());
    cudaFunction_t empty_fn = nullptr;
    CK(cudaGetFuncBySymbol(&empty_fn, (const void*)empty_kernel));
    const CUfunction f = (CUfunction)empty_fn;
    const CUstream cs = (CUstream)g.s_nb;
    const CUdeviceptr dp = (CUdeviceptr)(uintptr_t)d;
    const cudaStream_t s = g.s_nb;
    void* no_args[1] = {nullptr};  // the kernel has no parameters; the array is never read

    fprintf(stderr, "async_ref --overhead: %s, driver %d, runtime %d, %d calls per case behind a %llu ms kernel\n",
            gpu_name.c_str(), driver_version, runtime_version, OVERHEAD_ENQUEUES,
            OVERHEAD_BLOCKER_NS / 1000000ull);
    // A copy case's result is checked on the device afterwards (a wrong result is an error), and the
    // destination cleared for the next one.
    auto check_copy = [&](OverheadResult r) {
        unsigned char arrived[OVERHEAD_COPY_BYTES] = {0, 0, 0, 0};
        cudaError_t e = cudaMemcpy(arrived, d, OVERHEAD_COPY_BYTES, cudaMemcpyDeviceToHost);
        std::string wrong;
        if (e != cudaSuccess)
            wrong = "reading the copy's destination -> " + errstr(e);
        else if (memcmp(arrived, OVERHEAD_PATTERN, OVERHEAD_COPY_BYTES) != 0)
            wrong = "the copies did not deliver the source's 4 bytes";
        if (!wrong.empty()) {
            r.error += (r.has_error ? "; " : "") + wrong;
            r.has_error = true;
        }
        CK(cudaMemset(d, 0, OVERHEAD_COPY_BYTES));
        CK(cudaDeviceSynchronize());
        return r;
    };
    // The order async-lab runs them in.
    std::vector<OverheadResult> results;
    results.push_back(check_copy(overhead_case(OVERHEAD_IDS[0], Api::Driver, "cuMemcpyHtoDAsync", [&] {
        return (int)cuMemcpyHtoDAsync(dp, h, OVERHEAD_COPY_BYTES, cs);
    })));
    results.push_back(check_copy(overhead_case(OVERHEAD_IDS[1], Api::Runtime, "cudaMemcpyAsync(HostToDevice)", [&] {
        return (int)cudaMemcpyAsync(d, h, OVERHEAD_COPY_BYTES, cudaMemcpyHostToDevice, s);
    })));
    results.push_back(overhead_case(OVERHEAD_IDS[2], Api::Driver, "cuLaunchKernel", [&] {
        return (int)cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, cs, no_args, nullptr);
    }));
    results.push_back(
        overhead_case(OVERHEAD_IDS[3], Api::Runtime, "cudaLaunchKernel", [&] { return (int)launch_empty(s); }));

    CK(cudaFree(d));
    CK(cudaFreeHost(h));

    std::string o = "{\"tool\":\"async_ref\",\"mode\":\"overhead\"";
    o += ",\"gpu\":" + json_str(gpu_name);
    o += ",\"driver_version\":" + std::to_string(driver_version);
    o += ",\"runtime_version\":" + std::to_string(runtime_version);
    o += ",\"enqueues\":" + std::to_string(OVERHEAD_ENQUEUES);
    o += ",\"blocker_ns\":" + std::to_string(OVERHEAD_BLOCKER_NS);
    o += ",\"cases\":[\n";
    for (size_t i = 0; i < results.size(); ++i) {
        const OverheadResult& r = results[i];
        std::vector<double> sorted = r.us;
        std::sort(sorted.begin(), sorted.end());
        fprintf(stderr, "%-46s %-30s median %8.3f us  p10 %8.3f us  p90 %8.3f us  n %zu%s%s\n", r.id.c_str(),
                r.call.c_str(), percentile_sorted(sorted, 50.0), percentile_sorted(sorted, 10.0),
                percentile_sorted(sorted, 90.0), r.us.size(), r.has_error ? "  ERROR " : "",
                r.has_error ? r.error.c_str() : "");
        o += (i ? ",\n" : "") + overhead_json(r);
    }
    o += "\n]}\n";
    fputs(o.c_str(), out);
}

static void usage(const char* argv0) {
    fprintf(stderr,
            "usage: %s [--reps N] [--only SUBSTRING] [--out FILE] [--explicit-kinds] [--list]\n"
            "       %s --overhead [--out FILE] [--list]\n"
            "  --reps N          measured repetitions per case (default 5)\n"
            "  --only SUBSTRING  run only the cases whose id contains SUBSTRING\n"
            "  --out FILE        write the JSON report to FILE (default: stdout)\n"
            "  --explicit-kinds  pass cudaMemcpyHostToDevice etc. instead of cudaMemcpyDefault\n"
            "  --list            print the case ids and exit\n"
            "  --overhead        instead of the cases: time 500 enqueues of a 4-byte pinned host-to-device copy\n"
            "                    and of an empty kernel launch, through the runtime and the driver API, behind\n"
            "                    a 200 ms kernel (medians and p10/p90 in JSON; --reps and --only do not apply)\n",
            argv0, argv0);
}

int main(int argc, char** argv) {
    int nreps = 5;
    std::string only, out_path;
    bool list_only = false, overhead = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto need = [&](const char* what) -> std::string {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s needs %s\n", a.c_str(), what);
                usage(argv[0]);
                exit(2);
            }
            return argv[++i];
        };
        if (a == "--reps") {
            nreps = atoi(need("a number").c_str());
            if (nreps < 1) {
                fprintf(stderr, "--reps must be >= 1\n");
                return 2;
            }
        } else if (a == "--only") {
            only = need("a substring");
        } else if (a == "--out") {
            out_path = need("a file name");
        } else if (a == "--explicit-kinds") {
            g.explicit_kinds = true;
        } else if (a == "--list") {
            list_only = true;
        } else if (a == "--overhead") {
            overhead = true;
        } else if (a == "-h" || a == "--help") {
            usage(argv[0]);
            return 0;
        } else {
            fprintf(stderr, "unknown argument: %s\n", a.c_str());
            usage(argv[0]);
            return 2;
        }
    }

    if (overhead) {
        if (list_only) {
            for (const char* id : OVERHEAD_IDS) printf("%s\n", id);
            return 0;
        }
        std::string gpu_name;
        int driver_version = 0, runtime_version = 0;
        FILE* out = stdout;
        try {
            setup_device(gpu_name, driver_version, runtime_version);
            if (!out_path.empty()) {
                out = fopen(out_path.c_str(), "w");
                if (out == nullptr) {
                    fprintf(stderr, "cannot open %s for writing\n", out_path.c_str());
                    return 1;
                }
            }
            run_overhead(out, gpu_name, driver_version, runtime_version);
        } catch (const std::exception& e) {
            fprintf(stderr, "overhead: setup failed: %s\n", e.what());
            if (out != stdout) fclose(out);
            return 1;
        }
        if (out != stdout) fclose(out);
        return 0;
    }

    const std::vector<CaseDef> cases = build_cases();
    std::vector<const CaseDef*> selected;
    for (const CaseDef& c : cases)
        if (only.empty() || c.id.find(only) != std::string::npos) selected.push_back(&c);
    if (list_only) {
        for (const CaseDef* c : selected) printf("%s\n", c->id.c_str());
        return 0;
    }
    if (selected.empty()) {
        fprintf(stderr, "no case id contains \"%s\"\n", only.c_str());
        return 2;
    }

    std::string gpu_name;
    int driver_version = 0, runtime_version = 0;
    try {
        setup_device(gpu_name, driver_version, runtime_version);
        prepare_golden(selected);
    } catch (const std::exception& e) {
        fprintf(stderr, "setup failed: %s\n", e.what());
        return 1;
    }

    FILE* out = stdout;
    if (!out_path.empty()) {
        out = fopen(out_path.c_str(), "w");
        if (out == nullptr) {
            fprintf(stderr, "cannot open %s for writing\n", out_path.c_str());
            return 1;
        }
    }

    const char* env_loading = getenv("CUDA_MODULE_LOADING");
    const char* env_blocking = getenv("CUDA_LAUNCH_BLOCKING");
    fprintf(stderr, "async_ref: %s, driver %d, runtime %d, %zu cases, %d reps%s\n", gpu_name.c_str(), driver_version,
            runtime_version, selected.size(), nreps, g.explicit_kinds ? ", explicit memcpy kinds" : "");

    auto t_start = std::chrono::steady_clock::now();
    std::vector<std::string> case_objs;
    for (const CaseDef* c : selected) {
        CaseResult r = run_case(*c, nreps);
        print_row(r);
        case_objs.push_back(case_json(r));
    }
    double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    fprintf(stderr, "async_ref: done in %.1f s\n", total_s);

    std::string o = "{";
    o += "\"tool\":\"async_ref\"";
    o += ",\"gpu\":" + json_str(gpu_name);
    o += ",\"driver_version\":" + std::to_string(driver_version);
    o += ",\"runtime_version\":" + std::to_string(runtime_version);
    o += ",\"reps\":" + std::to_string(nreps);
    o += ",\"memcpy_kind\":" + std::string(g.explicit_kinds ? "\"explicit\"" : "\"default\"");
    o += ",\"seeds\":{\"a\":" + std::to_string(SEED_A) + ",\"b\":" + std::to_string(SEED_B) +
         ",\"poison\":" + std::to_string(SEED_POISON) + "}";
    o += ",\"env\":{\"CUDA_MODULE_LOADING\":" + (env_loading ? json_str(env_loading) : std::string("null")) +
         ",\"CUDA_LAUNCH_BLOCKING\":" + (env_blocking ? json_str(env_blocking) : std::string("null")) + "}";
    o += ",\"device_attrs\":{\"asyncEngineCount\":" + std::to_string(device_attr(cudaDevAttrAsyncEngineCount)) +
         ",\"unifiedAddressing\":" + std::to_string(device_attr(cudaDevAttrUnifiedAddressing)) +
         ",\"pageableMemoryAccess\":" + std::to_string(device_attr(cudaDevAttrPageableMemoryAccess)) +
         ",\"pageableMemoryAccessUsesHostPageTables\":" +
         std::to_string(device_attr(cudaDevAttrPageableMemoryAccessUsesHostPageTables)) +
         ",\"concurrentManagedAccess\":" + std::to_string(device_attr(cudaDevAttrConcurrentManagedAccess)) +
         ",\"memoryPoolsSupported\":" + std::to_string(device_attr(cudaDevAttrMemoryPoolsSupported)) + "}";
    o += ",\"total_s\":" + json_num(total_s);
    o += ",\"cases\":[\n";
    for (size_t i = 0; i < case_objs.size(); ++i) o += (i ? ",\n" : "") + case_objs[i];
    o += "\n]}\n";
    fputs(o.c_str(), out);
    if (out != stdout) fclose(out);
    return 0;
}
