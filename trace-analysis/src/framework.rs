//! Which framework made a traced program's CUDA calls, so that a remedy is worded in its API: PyTorch, JAX
//! (XLA), CuPy, Numba, or the CUDA API itself (a C++ or Rust program, or Python through another binding).
//!
//! A call's framework is read from where it was made: the packages of its Python chain (`torch/`,
//! `jax/` and `jaxlib/`, `cupy/`, `numba/`) and the libraries of its native frames (`libtorch_cuda.so`,
//! `libc10_cuda.so`, XLA's); a call without a location takes its process's, read the same way from every
//! location of the process (the most common framework wins) and, where the trace holds none, from its
//! kernels' names (PyTorch's `at::native::`, CuPy's `cupy_`, Numba's `cudapy`, XLA's fusions).

use super::format::{Line, NativeFrame, ProcessTrace, PyFrame};
use serde::{Deserialize, Serialize};

/// A framework.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    Torch,
    /// JAX, through XLA.
    Jax,
    CuPy,
    Numba,
    /// The CUDA runtime or driver API, called by the program itself.
    Native,
}

impl Framework {
    /// Its name for people.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Torch => "PyTorch",
            Framework::Jax => "JAX",
            Framework::CuPy => "CuPy",
            Framework::Numba => "Numba",
            Framework::Native => "the CUDA API",
        }
    }

    /// Whether it keeps the device memory it allocates for reuse (a caching allocator: PyTorch's, CuPy's
    /// memory pool, XLA's BFC allocator), so that its allocations are its pool's growth.
    pub fn caches_memory(self) -> bool {
        matches!(self, Framework::Torch | Framework::Jax | Framework::CuPy)
    }
}

/// The framework an installed package's file belongs to: the package right after `site-packages/` or
/// `dist-packages/` (`.../site-packages/torch/nn/...`; a virtual environment's own folder, `/opt/torch/.venv`,
/// names nothing).
fn of_python_file(file: &str) -> Option<Framework> {
    let (_, package) = file.rsplit_once("site-packages/").or_else(|| file.rsplit_once("dist-packages/"))?;
    package.split('/').next().and_then(|part| match part {
        "torch" | "torchvision" | "torchaudio" | "transformers" => Some(Framework::Torch),
        "jax" | "jaxlib" | "flax" | "optax" | "jax_plugins" => Some(Framework::Jax),
        "cupy" | "cupyx" | "cupy_backends" => Some(Framework::CuPy),
        "numba" | "numba_cuda" => Some(Framework::Numba),
        _ => None,
    })
}

/// The framework a native library belongs to (`libtorch_cuda.so`, `libc10_cuda.so`, XLA's extension).
fn of_native_module(module: &str) -> Option<Framework> {
    let file = module.rsplit('/').next().unwrap_or(module);
    if file.starts_with("libtorch") || file.starts_with("libc10") || module.contains("/torch/_C.") {
        Some(Framework::Torch)
    } else if file.contains("xla_extension")
        || file.starts_with("xla_cuda_plugin")
        || file.starts_with("libjax")
        || module.contains("/jaxlib/")
    {
        Some(Framework::Jax)
    } else if module.contains("/cupy/") || module.contains("/cupy_backends/") {
        Some(Framework::CuPy)
    } else if module.contains("/numba/") || module.contains("/numba_cuda/") {
        Some(Framework::Numba)
    } else {
        None
    }
}

/// The framework of a call's frames, innermost first: its first Python frame in a framework's package, else
/// its first native frame in a framework's library (`None`: none of them names one).
pub fn of_frames(python: &[PyFrame], native: &[NativeFrame]) -> Option<Framework> {
    python
        .iter()
        .find_map(|f| of_python_file(&f.file))
        .or_else(|| native.iter().find_map(|f| of_native_module(&f.module)))
}

/// The framework a kernel's name belongs to, where it says.
fn of_kernel(name: &str) -> Option<Framework> {
    if name.contains("at::native") || name.contains("at::cuda") || name.contains("_ZN2at") {
        Some(Framework::Torch)
    } else if name.starts_with("cupy_") {
        Some(Framework::CuPy)
    } else if name.contains("cudapy") {
        Some(Framework::Numba)
    } else if name.contains("_fusion") || name.starts_with("fusion") || name.contains("stream_executor") {
        Some(Framework::Jax)
    } else {
        None
    }
}

/// A process's framework: the one most of its locations name, else most of its kernels', else the CUDA API.
pub fn of_process(p: &ProcessTrace) -> Framework {
    let mut frames: Vec<Framework> = Vec::new();
    let mut kernels: Vec<Framework> = Vec::new();
    for line in &p.lines {
        match line {
            Line::Location { python, native, others, .. } => {
                frames.extend(of_frames(python, native));
                frames.extend(others.iter().filter_map(|o| of_frames(&o.python, &[])));
            }
            Line::Kernel { name, .. } => kernels.extend(of_kernel(name)),
            _ => {}
        }
    }
    most(&frames).or_else(|| most(&kernels)).unwrap_or(Framework::Native)
}

/// The most common of `all` (the first of the order of [`Framework`] on a tie).
fn most(all: &[Framework]) -> Option<Framework> {
    let mut counts: std::collections::BTreeMap<Framework, usize> = std::collections::BTreeMap::new();
    for f in all {
        *counts.entry(*f).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(f, n)| (*n, std::cmp::Reverse(*f))).map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(file: &str) -> PyFrame {
        PyFrame { file: file.into(), line: 1, function: "f".into() }
    }

    #[test]
    fn a_calls_framework_is_its_innermost_frame_in_a_frameworks_package() {
        let torch = [py("/venv/lib/python3.12/site-packages/torch/nn/modules/module.py"), py("/home/me/train.py")];
        assert_eq!(of_frames(&torch, &[]), Some(Framework::Torch));
        let jax = [py("/usr/local/lib/python3.12/dist-packages/jax/_src/array.py"), py("/home/me/train.py")];
        assert_eq!(of_frames(&jax, &[]), Some(Framework::Jax));
        assert_eq!(of_frames(&[py("/x/site-packages/cupy/_core/core.py")], &[]), Some(Framework::CuPy));
        assert_eq!(of_frames(&[py("/x/site-packages/numba/cuda/dispatcher.py")], &[]), Some(Framework::Numba));
        assert_eq!(of_frames(&[py("/home/me/train.py")], &[]), None);
        let native = NativeFrame {
            module: "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so".into(),
            offset: 0,
            function: None,
            file: None,
            line: None,
        };
        assert_eq!(of_frames(&[], &[native]), Some(Framework::Torch));
        // A user's own torch.py is not PyTorch's package, nor is CuPy's a virtual environment's folder's name.
        assert_eq!(of_frames(&[py("/home/me/torch.py")], &[]), None);
        let venv = "/opt/torch/.venv/lib/python3.12/site-packages/cupy/_creation/from_data.py";
        assert_eq!(of_frames(&[py(venv)], &[]), Some(Framework::CuPy));
    }

    #[test]
    fn kernels_name_their_framework_where_nothing_else_does() {
        assert_eq!(of_kernel("void at::native::vectorized_elementwise_kernel<4>"), Some(Framework::Torch));
        assert_eq!(of_kernel("cupy_add__float32_float32_float32"), Some(Framework::CuPy));
        assert_eq!(
            of_kernel("_ZN8__main__8add_kernel$241E5ArrayIfLi1E1C7mutable7alignedE_cudapy"),
            Some(Framework::Numba)
        );
        assert_eq!(of_kernel("loop_add_fusion"), Some(Framework::Jax));
        assert_eq!(of_kernel("spin"), None);
    }
}
