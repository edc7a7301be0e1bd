//! The remedies of a verdict (`headline`): a thread held by CUDA, busy launching, mostly outside CUDA calls, or
//! with nothing but warm-up traced.

use super::launches::{fewer_launches, launch_costs};
use super::Remedy;
use crate::framework::Framework;

/// The remedy of a thread *busy launching* (`headline`): it spends its time making CUDA calls.
pub fn busy_launching(f: Framework, api: &str) -> Remedy {
    let mut words = format!(
        "The thread is the bottleneck: it spends its time making calls while the GPU waits for them; {}",
        fewer_launches(f)
    );
    let mut lab = Vec::new();
    launch_costs(api, &mut words, &mut lab);
    Remedy { words, lab }
}

/// The remedy of a thread *mostly outside CUDA calls* (`headline`): its time goes to its own code.
pub fn mostly_outside(f: Framework) -> Remedy {
    let words = match f {
        Framework::Torch => {
            "The time goes to the program's own code between CUDA calls: the input pipeline \
                             (DataLoader(num_workers=..., pin_memory=True, persistent_workers=True), preprocessing \
                             moved to the GPU) or Python around the steps; profile the host side (py-spy, cProfile) \
                             to see where."
        }
        Framework::Jax => {
            "The time goes to the program's own code between CUDA calls: the input pipeline (prefetch \
                           batches ahead of the step, preprocessing inside jax.jit) or Python around the steps; \
                           profile the host side (py-spy, cProfile) to see where."
        }
        Framework::CuPy | Framework::Numba => {
            "The time goes to the program's own code between CUDA calls: its NumPy \
                                               or Python work around the kernels (move it to the GPU) or its input; \
                                               profile the host side (py-spy, cProfile) to see where."
        }
        Framework::Native => {
            "The time goes to the program's own code between CUDA calls, or to waiting for something \
                              else (input, I/O, locks): profile the host side (perf) to see where."
        }
    };
    Remedy { words: words.into(), lab: Vec::new() }
}

/// The remedy of a thread *held by CUDA* (`headline`): the findings, the most time first.
pub fn held_by_cuda() -> Remedy {
    Remedy {
        words: "The findings below say what held it and what to change, the most time first: each hold removed gives \
                its time back to the thread."
            .into(),
        lab: Vec::new(),
    }
}

/// The remedy of a thread whose every call is warm-up (`headline`).
pub fn only_warm_up() -> Remedy {
    Remedy {
        words: "Every call traced is paid once (warm-up): trace longer, past the first steps, to see the steady state."
            .into(),
        lab: Vec::new(),
    }
}
