//! What a bounded trace says of the calls it did not write (`Line::Counts`, see `bounded`), put together with
//! the calls it wrote, so that the tables per API function, their medians and longest calls and the count of
//! all calls read as from the whole trace.
//!
//! A duration counted without its call is known by its group, the calls that `units::duration` prints alike;
//! the median and the longest are order statistics, which a grouping that keeps the order leaves in the same
//! group, so they print as from every call.

use super::calls::Summary;
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

/// `rows` (of the written calls, `durations` theirs by function) with the counted calls added.
pub fn add(rows: &mut Vec<Summary>, durations: &std::collections::BTreeMap<&str, Vec<i64>>, rest: &Rest) {
    let mut names: Vec<&str> = rest.calls.iter().map(|c| c.name.as_str()).collect();
    names.extend(durations.keys());
    names.sort_unstable();
    names.dedup();
    for name in names {
        // Each printed duration's group: (one of its durations, how many).
        let mut groups: std::collections::HashMap<String, (i64, u64)> = std::collections::HashMap::new();
        let mut add_one = |ns: i64, n: u64| groups.entry(crate::units::duration(ns as f64)).or_insert((ns, 0)).1 += n;
        let written = durations.get(name).map_or(&[][..], Vec::as_slice);
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
        let row = Summary {
            name: name.to_owned(),
            calls: calls as usize,
            held_calls: rows.iter().find(|r| r.name == name).map_or(0, |r| r.held_calls),
            total_ns: total,
            max_ns: groups.last().map_or(0, |g| g.0),
            median_ns,
        };
        match rows.iter_mut().find(|r| r.name == name) {
            Some(r) => *r = row,
            None => rows.push(row),
        }
    }
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
}
