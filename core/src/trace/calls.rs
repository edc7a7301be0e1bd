//! Each call of a traced program through the attribution and the classes, as the lab's own experiments go:
//! what held the thread, for how long, and in words ("lazy module load waited for the 2 GiB host → device
//! copy ahead in its stream, correlation 122").

use super::scene::Program;
use crate::attribution::{attribute, Cause, Held};
use crate::classify::{class_of_held, Class};

/// One call, classified.
#[derive(Clone, Debug, PartialEq)]
pub struct Traced {
    /// The call's index in `Program::calls`.
    pub index: usize,
    pub held: Held,
    pub class: Class,
    /// Module loads on its thread while it ran (lazy loading).
    pub module_loads: usize,
    /// What held it, in words.
    pub cause: String,
}

/// Every call of the program, in the order they began.
pub fn classify(p: &Program) -> Vec<Traced> {
    (0..p.calls.len()).map(|i| traced(p, i)).collect()
}

/// Call `i`, classified.
pub fn traced(p: &Program, i: usize) -> Traced {
    let held = attribute(&p.scene(i));
    let module_loads = p.module_loads_in(i);
    let cause = cause_words(p, i, &held, module_loads);
    Traced { index: i, class: class_of_held(&held), held, module_loads, cause }
}

/// What held call `i`, in words: what released it, or its own work, or the call itself.
pub fn cause_words(p: &Program, i: usize, held: &Held, module_loads: usize) -> String {
    let loading = module_loads > 0;
    if let Some(seg) = held.released_by() {
        let what = match seg.cause {
            Cause::Thread => format!("another thread's call ({})", seg.what),
            Cause::Device => format!("other streams' work: {}", seg.what),
            _ => seg.what.clone(),
        };
        // A module loaded inside a call that waited: the load is what waited (lazy loading at a first launch).
        return if loading { format!("lazy module load waited for {what}") } else { format!("waited for {what}") };
    }
    let own = p.own_work(i);
    if held.held_through_own_work() == Some(true) {
        return match own.iter().find(|w| w.pageable()) {
            Some(w) => format!("its own transfer, staged by the driver on the calling thread: {}", w.words()),
            None => "its own work ran while it waited".into(),
        };
    }
    if loading {
        // Eager loading loads a program's modules inside its first call too: the trace cannot say which mode.
        return "a module load inside the call".into();
    }
    if held.ns(Cause::Own) > held.resolution_ns {
        return "its own work, in part".into();
    }
    "the call itself".into()
}

/// One API function's calls, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub name: String,
    pub calls: usize,
    /// Calls that held the thread longer than the threshold.
    pub held_calls: usize,
    pub total_ns: i64,
    pub max_ns: i64,
    pub median_ns: i64,
}

/// A summary per API function, the one with most time first.
pub fn summary(p: &Program, traced: &[Traced], min_held_ns: i64) -> Vec<Summary> {
    let mut by: std::collections::BTreeMap<&str, Vec<i64>> = std::collections::BTreeMap::new();
    for t in traced {
        by.entry(p.calls[t.index].name.as_str()).or_default().push(t.held.total_ns);
    }
    let mut rows: Vec<Summary> = by
        .into_iter()
        .map(|(name, mut ns)| {
            ns.sort_unstable();
            Summary {
                name: name.to_owned(),
                calls: ns.len(),
                held_calls: ns.iter().filter(|&&n| n > min_held_ns).count(),
                total_ns: ns.iter().sum(),
                max_ns: *ns.last().unwrap_or(&0),
                median_ns: ns[ns.len() / 2],
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    rows
}
