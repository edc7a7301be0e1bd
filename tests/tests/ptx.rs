//! The kernels' PTX, checked without a GPU: the ABI the host relies on (entry names and parameter types, as
//! the kernel list in `ptx-abi` gives them) and the few instructions that make each experiment mean what it
//! claims.

use async_lab_ptx::kernels::{CHECKSUM, SPIN_SLEEP, SPIN_WAIT_NS, WRITE_GLOBALTIMER};
use async_lab_ptx::{Module, KERNELS};
use async_lab_tests::ptx_text;

/// The body of kernel `name` in the module.
fn body<'a>(module: &Module<'a>, name: &str) -> Vec<&'a str> {
    module.entry(name).unwrap_or_else(|| panic!("no `.entry {name}` in the PTX")).body.clone()
}

/// The loops of a body, as (label line, backward `bra` line) index pairs.
fn loops(body: &[&str]) -> Vec<(usize, usize)> {
    let mut loops = Vec::new();
    for (bra, line) in body.iter().enumerate() {
        let Some((_, target)) = line.split_once("bra") else {
            continue;
        };
        let target = target.trim_start_matches(".uni").trim().trim_end_matches(';');
        let label = format!("{target}:");
        if let Some(start) = body[..bra].iter().position(|line| *line == label) {
            loops.push((start, bra));
        }
    }
    loops
}

fn in_a_loop(body: &[&str], line: usize) -> bool {
    loops(body).iter().any(|&(start, end)| start < line && line < end)
}

/// The module's kernels are the list's, with the parameter types the host passes (the list is the one
/// owner: `ptx-abi/src/kernels.rs`).
#[test]
fn the_kernels_take_the_parameters_the_host_passes() {
    let ptx = ptx_text();
    let module = Module::parse(&ptx);
    let mut found: Vec<String> = module.entries.iter().map(|e| e.signature()).collect();
    let mut listed: Vec<String> = KERNELS.iter().map(|k| k.signature()).collect();
    found.sort();
    listed.sort();
    assert_eq!(found, listed);
}

#[test]
fn spin_sleep_reads_clock64_in_a_loop() {
    let ptx = ptx_text();
    let body = &body(&Module::parse(&ptx), SPIN_SLEEP.name);
    let reads: Vec<usize> = (0..body.len()).filter(|&i| body[i].contains("%clock64")).collect();
    assert!(!reads.is_empty(), "spin_sleep never reads %clock64:\n{}", body.join("\n"));
    assert!(
        reads.iter().any(|&i| in_a_loop(body, i)),
        "spin_sleep reads %clock64, but not in a loop (a label before the read, a `bra` back to it after):\n{}",
        body.join("\n")
    );
}

#[test]
fn spin_wait_ns_reads_globaltimer_in_a_loop() {
    let ptx = ptx_text();
    let body = &body(&Module::parse(&ptx), SPIN_WAIT_NS.name);
    let reads: Vec<usize> = (0..body.len()).filter(|&i| body[i].contains("%globaltimer")).collect();
    assert!(!reads.is_empty(), "spin_wait_ns never reads %globaltimer:\n{}", body.join("\n"));
    assert!(
        reads.iter().any(|&i| in_a_loop(body, i)),
        "spin_wait_ns does not spin on %globaltimer:\n{}",
        body.join("\n")
    );
}

#[test]
fn checksum_adds_once_per_thread_atomically() {
    let ptx = ptx_text();
    let body = &body(&Module::parse(&ptx), CHECKSUM.name);
    let atomics: Vec<usize> = (0..body.len()).filter(|&i| body[i].starts_with("atom")).collect();
    let [atomic] = atomics.as_slice() else {
        panic!("checksum should have exactly one atomic instruction:\n{}", body.join("\n"));
    };
    let instruction = body[*atomic].split_whitespace().next().unwrap();
    assert!(instruction.contains(".add.u64"), "checksum's atomic is `{instruction}`, not a u64 add");
    assert!(!in_a_loop(body, *atomic), "checksum's atomic add is inside its loop:\n{}", body.join("\n"));
}

#[test]
fn write_globaltimer_reads_globaltimer() {
    let ptx = ptx_text();
    let body = &body(&Module::parse(&ptx), WRITE_GLOBALTIMER.name);
    assert!(body.iter().any(|line| line.contains("%globaltimer")), "{}", body.join("\n"));
}

#[test]
fn the_loop_finder_sees_backward_branches_only() {
    let body = ["a:", "mov.u64 %rd1, %clock64;", "@%p1 bra a;", "@%p2 bra b;", "b:", "ret;"];
    assert_eq!(loops(&body), [(0, 2)]);
    assert!(in_a_loop(&body, 1));
    assert!(!in_a_loop(&body, 5));
}
