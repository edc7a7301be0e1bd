//! The kernels' PTX, checked without a GPU: the ABI the host relies on (entry names and parameter types, as a
//! snapshot) and the few instructions that make each experiment mean what it claims.

use async_lab_tests::ptx_text;

/// One `.entry` of the module.
struct Entry<'a> {
    name: &'a str,
    /// Parameter types (`.u64`, `.u32`), names and pointer annotations left out.
    params: Vec<&'a str>,
    /// The instruction lines between `{` and `}`, trimmed.
    body: Vec<&'a str>,
}

fn entries(ptx: &str) -> Vec<Entry<'_>> {
    let mut entries = Vec::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some((_, rest)) = line.split_once(".entry ") else {
            continue;
        };
        let (name, after) = rest.split_once('(').expect("`.entry name(`");
        let mut params = Vec::new();
        if !after.trim_start().starts_with(')') {
            for line in lines.by_ref() {
                let line = line.trim();
                if let Some(param) = line.strip_prefix(".param ") {
                    params.push(param.split_whitespace().next().unwrap());
                }
                if line.ends_with(')') {
                    break;
                }
            }
        }
        let body = lines
            .by_ref()
            .skip_while(|line| line.trim() != "{")
            .skip(1)
            .take_while(|line| *line != "}")
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        entries.push(Entry { name: name.trim(), params, body });
    }
    entries
}

fn entry<'a>(entries: &'a [Entry<'a>], name: &str) -> &'a Entry<'a> {
    entries.iter().find(|entry| entry.name == name).unwrap_or_else(|| panic!("no `.entry {name}` in the PTX"))
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

#[test]
fn entry_signatures() {
    let ptx = ptx_text();
    let signatures: Vec<String> =
        entries(&ptx).iter().map(|entry| format!("{}({})", entry.name, entry.params.join(", "))).collect();
    insta::assert_snapshot!("entry_signatures", signatures.join("\n"));
}

#[test]
fn spin_sleep_reads_clock64_in_a_loop() {
    let ptx = ptx_text();
    let entries = entries(&ptx);
    let body = &entry(&entries, "spin_sleep").body;
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
    let entries = entries(&ptx);
    let body = &entry(&entries, "spin_wait_ns").body;
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
    let entries = entries(&ptx);
    let body = &entry(&entries, "checksum").body;
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
    let entries = entries(&ptx);
    let body = &entry(&entries, "write_globaltimer").body;
    assert!(body.iter().any(|line| line.contains("%globaltimer")), "{}", body.join("\n"));
}

#[test]
fn the_loop_finder_sees_backward_branches_only() {
    let body = ["a:", "mov.u64 %rd1, %clock64;", "@%p1 bra a;", "@%p2 bra b;", "b:", "ret;"];
    assert_eq!(loops(&body), [(0, 2)]);
    assert!(in_a_loop(&body, 1));
    assert!(!in_a_loop(&body, 5));
}
