//! `--fail-on-held`, the trace as a CI gate: the calls that held their thread longer than the limit, longest
//! first, each with its class, what held it (as a finding names it), its place and its `--explain` id; and
//! whether the gate passed. Warm-up is left out unless asked (`--fail-on-warm-up`): what the program pays once
//! (`once`: the context, loading code, the allocator's growth, a model's upload...) and the steps
//! `--skip-first` counts as warm-up; so is start-up with `--after-startup`. The text on stderr and the JSON
//! report's `gate` say the same.

use super::analysis::Analysis;
use super::cause::{self, Kind};
use super::warmup;
use super::words::duration;
use serde::{Deserialize, Serialize};

/// What the gate was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    /// `--fail-on-held`, in ns.
    pub limit_ns: i64,
    /// `--fail-on-warm-up`: warm-up counts too.
    pub warm_up: bool,
    /// `--after-startup`: start-up never counts.
    pub after_startup: bool,
    /// `--skip-first`: the first steps are warm-up.
    pub skip_first: usize,
}

/// The gate's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Gate {
    /// The limit (`--fail-on-held`), ns.
    pub limit_ns: i64,
    /// Whether warm-up counted (`--fail-on-warm-up`); by default what is paid once and the steps `--skip-first`
    /// counts as warm-up are left out.
    pub warm_up_counted: bool,
    /// The calls held longer than the limit that count, longest first.
    pub calls: Vec<GateCall>,
    /// Of the calls held longer than the limit, how many were left out as warm-up.
    pub warm_up_left_out: usize,
    /// No call that counts held its thread longer than the limit.
    pub passed: bool,
}

/// A call past the gate's limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GateCall {
    /// Its process.
    pub pid: u32,
    /// Its correlation id (`--explain`).
    pub corr: u32,
    pub name: String,
    pub thread: u64,
    pub held_ns: i64,
    pub class: String,
    /// What held it, as its finding names it.
    pub kind: Kind,
    /// Where it was made, in one line.
    pub place: String,
    /// It is warm-up (counted only with `--fail-on-warm-up`).
    pub warm_up: bool,
}

/// The gate over the analysed processes of a trace.
pub fn gate(analyses: &[Analysis], asked: Asked) -> Gate {
    let mut calls = Vec::new();
    let mut warm_up_left_out = 0;
    for a in analyses {
        let warm = warmup::warm_up(a, asked.skip_first);
        for t in a.held(asked.limit_ns, asked.after_startup) {
            let i = t.index;
            let is_warm = warm.calls[i];
            if is_warm && !asked.warm_up {
                warm_up_left_out += 1;
                continue;
            }
            let c = &a.program.calls[i];
            calls.push(GateCall {
                pid: a.process.pid,
                corr: c.corr,
                name: c.name.clone(),
                thread: c.tid,
                held_ns: t.held.total_ns,
                class: t.class.as_str().into(),
                kind: cause::kind(a, i),
                place: a.places[i].shown(),
                warm_up: is_warm,
            });
        }
    }
    calls.sort_by(|x, y| y.held_ns.cmp(&x.held_ns).then(x.pid.cmp(&y.pid)).then(x.corr.cmp(&y.corr)));
    let passed = calls.is_empty();
    Gate { limit_ns: asked.limit_ns, warm_up_counted: asked.warm_up, calls, warm_up_left_out, passed }
}

/// The gate in words, for stderr: one line per call past the limit (time held, class, API function, place,
/// the `--explain` id last), and a line for the warm-up left out; empty where it passed with nothing left out.
pub fn text(g: &Gate) -> String {
    let mut out = String::new();
    let n = g.calls.len();
    if n > 0 {
        out.push_str(&format!(
            "async-lab: {n} call{} held {} thread longer than --fail-on-held {}:\n",
            if n == 1 { "" } else { "s" },
            if n == 1 { "its" } else { "their" },
            duration(g.limit_ns)
        ));
        for c in &g.calls {
            out.push_str(&format!(
                "  held {}, {}: {} {} (--explain {}){}\n",
                duration(c.held_ns),
                c.class,
                c.name,
                super::location::at(&c.place),
                c.corr,
                if c.warm_up { " [warm-up]" } else { "" }
            ));
        }
    }
    if g.warm_up_left_out > 0 {
        out.push_str(&format!(
            "async-lab: {} warm-up call{} (paid once, or in the steps --skip-first counts) held longer than {}, not \
             gated (--fail-on-warm-up gates {})\n",
            g.warm_up_left_out,
            if g.warm_up_left_out == 1 { "" } else { "s" },
            duration(g.limit_ns),
            if g.warm_up_left_out == 1 { "it" } else { "them" }
        ));
    }
    out
}
