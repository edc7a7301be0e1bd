//! The JSON output of the C++ reference program (`reference/async_ref.cu`, described in `reference/README.md`):
//! its cases, each with the runtime function it timed, its class and its repetitions' classes, and per
//! repetition the timed call's start on `CLOCK_MONOTONIC`. Read by `compare` (the reference's classes beside
//! a recording's) and by `trace::against_reference` (beside a trace of the reference).
//!
//! The classes are the words the reference writes, in the vocabulary before the classes named what held the
//! thread (`waited-then-staged` for today's `waited-for-stream`): `class::Class::from_legacy_word` reads them.

use anyhow::{bail, Context as _};
use serde::Deserialize;
use std::path::Path;

/// What the reference writes in its `"tool"` field.
pub const TOOL: &str = "async_ref";

/// One run of the reference.
#[derive(Clone, Debug, Deserialize)]
pub struct RefOutput {
    pub tool: String,
    /// "overhead" for `--overhead`'s output (no classes), absent for the cases.
    #[serde(default)]
    pub mode: Option<String>,
    /// "explicit" (cudaMemcpyHostToDevice, ...) or "default" (cudaMemcpyDefault): how its copies were named.
    #[serde(default)]
    pub memcpy_kind: Option<String>,
    pub cases: Vec<RefCase>,
}

/// One case of the reference.
#[derive(Clone, Debug, Deserialize)]
pub struct RefCase {
    pub id: String,
    /// The runtime function the timed call goes through (`cudaMemcpyAsync`); absent in output written before
    /// the reference named it, null where the case failed before its call was known.
    #[serde(default)]
    pub call: Option<String>,
    /// The case's class (its repetitions' most frequent), null when it has an error.
    #[serde(default)]
    pub class: Option<String>,
    #[serde(default)]
    pub host_call_us: Option<RefSpread>,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the blocker ran in the call's own stream, ordered before it.
    #[serde(default)]
    pub blocker_ahead: Option<bool>,
    /// Each repetition's timed call: its start in ns of `CLOCK_MONOTONIC`, and its length in ns (absent in
    /// output written before the reference recorded them).
    #[serde(default)]
    pub host_call_start_ns: Vec<u64>,
    #[serde(default)]
    pub host_call_ns: Vec<u64>,
}

/// A spread of the reference's times, in µs.
#[derive(Clone, Debug, Deserialize)]
pub struct RefSpread {
    #[serde(default)]
    pub median: Option<f64>,
}

/// Whether `text` is JSON that the reference wrote (its `"tool"` is `async_ref`).
pub fn written_by_async_ref(text: &str) -> bool {
    #[derive(Deserialize)]
    struct Tool {
        #[serde(default)]
        tool: Option<String>,
    }
    serde_json::from_str::<Tool>(text).is_ok_and(|t| t.tool.as_deref() == Some(TOOL))
}

impl RefOutput {
    pub fn parse(text: &str) -> anyhow::Result<RefOutput> {
        let refs: RefOutput = serde_json::from_str(text).context("it is not JSON in async_ref's output format")?;
        if refs.tool != TOOL {
            bail!("it was written by {:?}, not {TOOL}", refs.tool);
        }
        Ok(refs)
    }

    pub fn load(path: &Path) -> anyhow::Result<RefOutput> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{} is not usable async_ref output", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_is_told_by_its_tool_field() {
        assert!(written_by_async_ref(r#"{"tool":"async_ref","cases":[]}"#));
        assert!(!written_by_async_ref(r#"{"kind":"async-lab-recording","cases":[]}"#));
        assert!(!written_by_async_ref("not json"));
        let e = RefOutput::parse(r#"{"tool":"other","cases":[]}"#).unwrap_err();
        assert!(format!("{e:#}").contains("not async_ref"), "{e:#}");
    }

    #[test]
    fn output_written_before_the_calls_were_timed_on_the_monotonic_clock_still_reads() {
        let refs =
            RefOutput::parse(r#"{"tool":"async_ref","cases":[{"id":"a","class":"staged","error":null}]}"#).unwrap();
        assert_eq!(refs.cases[0].call, None);
        assert!(refs.cases[0].host_call_start_ns.is_empty());
    }
}
