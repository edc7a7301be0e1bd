//! What this version of async-lab expects of every experiment it knows, by id, without the experiments.
//!
//! What the documentation predicts is knowledge that improves: a replay applies today's rule and expectation
//! to yesterday's measurements, where the experiment was set up the same way (same driver call, blocker ahead
//! or not). The experiment catalogue that knows them is the measuring crate's (`host/src/experiments`); this
//! module reads a table made from it, `expectations.jsonl` beside this file, one experiment per line. The
//! test `tests/tests/expectations.rs` checks that the table is the catalogue's, and rewrites it (outside CI)
//! when the catalogue changed.

use crate::api::Api;
use crate::record::CaseSetup;
use crate::rules::Expected;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The table's text, as committed.
pub const TABLE: &str = include_str!("expectations.jsonl");

/// One line of the table: an experiment as the catalogue defines it today.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Known {
    /// The template's id (a peer experiment's records add the pair: see `setup::pair_id`).
    pub id: String,
    pub api: Api,
    pub call: String,
    pub blocker_ahead: bool,
    pub rule: String,
    pub expected: Expected,
}

impl Known {
    pub fn of(setup: &CaseSetup) -> Known {
        Known {
            id: setup.id.clone(),
            api: setup.api,
            call: setup.call.clone(),
            blocker_ahead: setup.blocker_ahead,
            rule: setup.rule.clone(),
            expected: setup.expected.clone(),
        }
    }
}

/// The table's text for these setups: one JSON object per line, sorted by id, each id once.
pub fn table_text<'s>(setups: impl IntoIterator<Item = &'s CaseSetup>) -> String {
    let rows: BTreeMap<&str, Known> = setups.into_iter().map(|s| (s.id.as_str(), Known::of(s))).collect();
    let mut out = String::new();
    for row in rows.values() {
        out.push_str(&serde_json::to_string(row).expect("a table row serializes"));
        out.push('\n');
    }
    out
}

/// The committed table, by id.
fn table() -> &'static BTreeMap<String, Known> {
    static PARSED: OnceLock<BTreeMap<String, Known>> = OnceLock::new();
    PARSED.get_or_init(|| {
        TABLE
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let row: Known = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("core/src/expectations.jsonl line {}: {e}", i + 1));
                (row.id.clone(), row)
            })
            .collect()
    })
}

/// Today's rule and expectation for a recorded setup, where this version knows its id and the experiment
/// was set up the same way (same call, blocker ahead or not).
pub fn current_rule(setup: &CaseSetup) -> Option<(String, Expected)> {
    let now = table().get(crate::setup::template_id(&setup.id))?;
    (now.blocker_ahead == setup.blocker_ahead && now.call == setup.call)
        .then(|| (now.rule.clone(), now.expected.clone()))
}

/// Whether a driver case is also measured through the runtime (`runtime/` + its id is an experiment).
pub fn has_runtime_twin(setup: &CaseSetup) -> bool {
    setup.api == Api::Driver
        && table()
            .get(&format!("{}{}", Api::Runtime.id_prefix(), setup.id))
            .is_some_and(|twin| twin.api == Api::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::CallTiming;

    #[test]
    fn the_committed_table_parses_and_names_each_id_once_in_order() {
        let rows: Vec<Known> = TABLE.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert!(ids.len() > 100, "the table has {} experiments", ids.len());
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "the table is not sorted by id, or repeats one");
        assert_eq!(table().len(), ids.len());
    }

    #[test]
    fn a_changed_call_or_blocker_keeps_the_recorded_rule() {
        let known = table().values().next().unwrap();
        let setup = |call: &str, ahead: bool| CaseSetup {
            id: known.id.clone(),
            family: crate::setup::Family::Copy,
            call: call.to_owned(),
            rule: "X".into(),
            expected: Expected::undocumented(),
            stream: None,
            blocker: crate::setup::BlockerPlacement::None,
            blocker_stream: None,
            blocker_ahead: ahead,
            host_memory: None,
            bytes: 0,
            what: String::new(),
            api: known.api,
            peer: None,
            direction: None,
            timing: CallTiming::Stopwatch,
            case: None,
        };
        assert_eq!(
            current_rule(&setup(&known.call, known.blocker_ahead)),
            Some((known.rule.clone(), known.expected.clone()))
        );
        assert_eq!(current_rule(&setup("cuSomethingElse", known.blocker_ahead)), None);
        assert_eq!(current_rule(&setup(&known.call, !known.blocker_ahead)), None);
    }
}
