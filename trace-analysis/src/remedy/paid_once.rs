//! The remedies of what a program pays once (`once`): a context's creation, loading code, compiling, a
//! library's setup, the allocator's growth, a model's upload: each moved out of the part that is timed, or
//! paid before it, in the framework's own words.

use super::{Group, LabEvidence};
use crate::framework::Framework;
use crate::functions;
use crate::remedies;
use crate::words::duration;

pub(super) fn context_creation(f: Framework) -> String {
    let how = match f {
        Framework::Torch => "torch.cuda.init(), or any CUDA tensor at start-up",
        Framework::Jax => "jax.devices(), or a first jax.numpy operation at start-up",
        Framework::CuPy => "cupy.cuda.Device(0).use(), or a first CuPy array at start-up",
        Framework::Numba => "cuda.current_context() at start-up",
        Framework::Native => "cudaFree(0) or cudaInitDevice at start-up",
    };
    format!(
        "Paid once per process, and not to be avoided, only moved: create the context before the part you time \
         ({how}), or leave start-up out (--after-startup)."
    )
}

pub(super) fn loading_code(g: &mut Group) -> String {
    let first = match g.framework {
        Framework::Torch => {
            "PyTorch loads each kernel's module and each library (cuBLAS, cuDNN) at its first use: run one \
             warm-up step with the real shapes before the part you time, or set CUDA_MODULE_LOADING=EAGER to load \
             a module's kernels with it."
        }
        Framework::Jax => {
            "JAX compiles a jitted function at its first call with each new shape and loads its kernels then: \
             call it once with the real shapes before the part you time (or jax.jit(f).lower(...).compile()), \
             and keep shapes fixed so that it does not compile again."
        }
        Framework::CuPy => {
            "CuPy compiles (and caches on disk) and loads a kernel at its first call: call it once before the \
             part you time; CUDA_MODULE_LOADING=EAGER loads a module's kernels with it."
        }
        Framework::Numba => {
            "A @cuda.jit kernel compiles and loads at its first call: call it once before the part you time, or \
             give it its signature (@cuda.jit(\"void(float32[:])\")) so that it compiles when defined."
        }
        Framework::Native => {
            "Load the code before the loop: launch each kernel once first (a warm-up), load libraries at \
             start-up, or set CUDA_MODULE_LOADING=EAGER to load a module's kernels with it."
        }
    };
    let mut words = first.to_owned();
    let lab = remedies::lab();
    let lazy = lab.load(g.api, "first-launch", "lazy", "other");
    let eager = lab.load(g.api, "first-launch", "eager", "other");
    let library = lab.load(g.api, "library-load-data", "eager", "other");
    if let (Some(lazy), Some(eager)) = (lazy, eager) {
        words.push_str(&format!(
            " On the lab's {} a first launch under lazy loading waited {} for a kernel on another stream \
             ({}); under EAGER it returned in {}",
            lab.gpu,
            duration(lazy.waited_ns),
            lazy.class,
            duration(eager.returned_ns)
        ));
        for l in [lazy, eager] {
            g.lab.push(LabEvidence {
                case: l.case.clone(),
                recording: l.recording.clone(),
                words: format!("a first launch under {} loading: {}, {}", l.loading, l.class, duration(l.returned_ns)),
            });
        }
        match library {
            Some(lib) if lib.waited_ns > 0 => {
                words.push_str(&format!(
                    ", and loading the library waited for the device instead ({}): load before the GPU is busy.",
                    duration(lib.waited_ns)
                ));
                g.lab.push(LabEvidence {
                    case: lib.case.clone(),
                    recording: lib.recording.clone(),
                    words: format!("a library load under eager loading: {}, {}", lib.class, duration(lib.returned_ns)),
                });
            }
            _ => words.push('.'),
        }
    }
    words
}

pub(super) fn compiling(f: Framework) -> String {
    let how = match f {
        Framework::Numba => "give the kernel its signature so that it compiles when defined",
        Framework::Torch => {
            "call the compiled function once on inputs of the real shapes before the loop (torch.compile's cache, \
             TORCHINDUCTOR_CACHE_DIR, keeps it for later runs)"
        }
        Framework::CuPy => "CuPy keeps what it compiled on disk (CUPY_CACHE_DIR): later runs load it",
        Framework::Jax => {
            "JAX's persistent compilation cache (jax.config.update(\"jax_compilation_cache_dir\", ...)) \
                           keeps it for later runs"
        }
        _ => {
            "build for this GPU's architecture (nvcc -arch=sm_90) rather than PTX alone, so that nothing is compiled \
              at run time"
        }
    };
    match f {
        Framework::Jax | Framework::Torch | Framework::Numba => format!(
            "Code was compiled for this GPU at a function's first call (a JIT: the framework's compiler, and the \
             kernels it autotuned meanwhile): paid once, before the part you time; {how}."
        ),
        _ => format!(
            "The driver compiled code for this GPU once per kernel (a JIT): paid once, before the part you time; \
             {how}. The driver also caches it (CUDA_CACHE_PATH)."
        ),
    }
}

pub(super) fn library_setup(f: Framework) -> String {
    match f {
        Framework::Torch => "cuBLAS and cuDNN set themselves up at their first use (a handle, a workspace, and with \
                             torch.backends.cudnn.benchmark=True the autotuning of each new shape): paid once; run a \
                             warm-up step with the real shapes before the part you time."
            .into(),
        Framework::Jax => {
            "XLA's libraries (cuBLAS, cuDNN) set themselves up and autotune at a jitted function's first \
                           call: paid once; call it once with the real shapes before the part you time."
                .into()
        }
        _ => "The library's handle and workspace are set up once: create the handle (cublasCreate, cudnnCreate) at \
              start-up and reuse it for every call, and set its stream and workspace once."
            .into(),
    }
}

pub(super) fn allocator_growth(g: &Group) -> String {
    let host = g.calls.iter().filter(|&&i| functions::allocates_host(&g.a.program.calls[i].name)).count();
    if host > 0 && host < g.calls.len() && g.framework == Framework::Torch {
        return "PyTorch's caching allocators grew their pools (cudaMalloc for device memory, cudaHostAlloc for \
                pinned memory) at the first steps: they keep and reuse the memory from then on; paid once. To pay \
                it before the part you time, run a warm-up step with the real shapes, and keep shapes steady so \
                that they do not grow again."
            .into();
    }
    let pinned = host == g.calls.len();
    let what = match (g.framework, pinned) {
        (Framework::Torch, true) => {
            "PyTorch's pinned-memory cache grew (cudaHostAlloc at a first pin_memory() or pinned tensor of a size): \
             it keeps and reuses what it pinned"
        }
        (Framework::Torch, false) => {
            "PyTorch's caching allocator grew its pool (cudaMalloc) at the first steps: it keeps and reuses the \
             memory from then on"
        }
        (Framework::Jax, _) => {
            "XLA's allocator took memory (by default it reserves most of the GPU at start-up: \
             XLA_PYTHON_CLIENT_PREALLOCATE)"
        }
        (Framework::CuPy, true) => "CuPy's pinned memory pool grew: it keeps and reuses what it pinned",
        (_, _) => "The memory pool grew: it keeps and reuses what it allocated",
    };
    format!(
        "{what}; paid once. To pay it before the part you time, run a warm-up step with the real shapes, and \
         keep shapes steady so that it does not grow again."
    )
}

pub(super) fn upload(f: Framework) -> String {
    let how = match f {
        Framework::Torch => {
            "the model's weights copied to the GPU once (model.to(device), .cuda()); to skip the copy, \
                             create them on the GPU: build the model under `with torch.device(\"cuda\"):`"
        }
        Framework::Jax => {
            "the parameters put on the GPU once (jax.device_put); to skip the copy, initialize them on \
                           the device (jax.random inside jax.jit)"
        }
        Framework::CuPy => {
            "the data copied to the GPU once (cupy.asarray); to skip the copy, create it there (cupy.random, \
                            cupy.zeros)"
        }
        Framework::Numba => {
            "the data copied to the GPU once (cuda.to_device); create it there (cuda.device_array) to skip \
                             the copy"
        }
        Framework::Native => "the program's data copied to the GPU once, before its first kernel",
    };
    format!("Paid once, at start-up, not in the loop: {how}. Pinning memory for a one-time copy saves little.")
}
