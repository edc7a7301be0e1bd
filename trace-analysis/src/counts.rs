//! What a bounded trace says of the calls it did not write (`Line::Counts`, see `bounded`), put together with
//! the calls it wrote, so that the tables per API function, their medians and longest calls and the count of
//! all calls read as from the whole trace.
//!
//! A duration counted without its call is known by its group, the calls that `units::duration` prints alike;
//! the median and the longest are order statistics, which a grouping that keeps the order leaves in the same
//! group, so they print as from every call.

use super::format::CallCount;

/// The calls a bounded trace counted without writing them (its last `counts` line).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rest {
    /// The trace wrote every call that held its thread longer than this.
    pub keep_over_ns: u64,
    pub calls: Vec<CallCount>,
}

impl Rest {
    /// How many calls it counted.
    pub fn total(&self) -> usize {
        self.calls.iter().map(|c| c.calls as usize).sum()
    }
}

/// One function's calls, written and counted together.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub calls: usize,
    pub total_ns: i64,
    /// As printed, the median's and the longest's durations (see the module's doc).
    pub median_ns: i64,
    pub max_ns: i64,
}

/// The functions the rest counted.
pub fn names(rest: &Rest) -> Vec<&str> {
    let mut names: Vec<&str> = rest.calls.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Function `name`'s calls: `written` (their durations) and those `rest` counted.
pub fn merged(name: &str, written: &[i64], rest: &Rest) -> Merged {
    // Each printed duration's group: (one of its durations, how many).
    let mut groups: std::collections::HashMap<String, (i64, u64)> = std::collections::HashMap::new();
    let mut add_one = |ns: i64, n: u64| groups.entry(crate::units::duration(ns as f64)).or_insert((ns, 0)).1 += n;
    for &ns in written {
        add_one(ns, 1);
    }
    let mut total: i64 = written.iter().sum();
    for c in rest.calls.iter().filter(|c| c.name == name) {
        total += c.total_ns as i64;
        for &[ns, n] in &c.durations {
            add_one(ns as i64, n);
        }
    }
    let mut groups: Vec<(i64, u64)> = groups.into_values().collect();
    groups.sort_unstable();
    let calls: u64 = groups.iter().map(|g| g.1).sum();
    // The group holding the call a sort puts at calls / 2, as `calls::summary` takes the median.
    let mut seen = 0;
    let median_ns = groups
        .iter()
        .find(|g| {
            seen += g.1;
            seen > calls / 2
        })
        .map_or(0, |g| g.0);
    Merged { calls: calls as usize, total_ns: total, median_ns, max_ns: groups.last().map_or(0, |g| g.0) }
}

/// Per thread, what the rest counted: (thread, calls, their time, the first's start, the last's end).
pub fn per_thread(rest: &Rest) -> Vec<(u64, usize, i64, i64, i64)> {
    let mut by: std::collections::BTreeMap<u64, (usize, i64, i64, i64)> = std::collections::BTreeMap::new();
    for c in rest.calls.iter().filter(|c| c.calls > 0) {
        let t = by.entry(c.tid).or_insert((0, 0, c.first_ns as i64, c.last_ns as i64));
        t.0 += c.calls as usize;
        t.1 += c.total_ns as i64;
        t.2 = t.2.min(c.first_ns as i64);
        t.3 = t.3.max(c.last_ns as i64);
    }
    by.into_iter().map(|(tid, (n, ns, first, last))| (tid, n, ns, first, last)).collect()
}
