//! What [`attribute`](super::attribute) answers: a call's time cut into segments, each with the cause that
//! held the thread during it, the holders that only overlapped it, and what the readings say of the share of
//! its own GPU work that held the thread (decided only where they resolve it).

use super::{Cause, Identity, Span};
use serde::Serialize;

/// The share of its own GPU work a call must have held the thread for to count as held through it: most of
/// it. (In the H200's recordings the shares of calls that held their transfer lie above 0.87, those of calls
/// that returned with the last part of it in flight below 0.76: the line sits in that gap, away from both.)
pub const HELD_THROUGH: f64 = 0.85;

/// How many times the clock error a call's own work must last for the share it held to be decided: its start
/// is placed on the host's clock to within the clock error either way, so below this its length is not known
/// to within a tenth.
pub const RESOLVED_LENGTH: i64 = 20;

/// One stretch of the call's time and what held the thread during it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Segment {
    pub cause: Cause,
    pub span: Span,
    /// The holder's words, for waiting segments; empty for `Own` and `Call`.
    pub what: String,
    /// Which holder it was, as data (empty for `Own` and `Call`); its words are `what`.
    #[serde(skip)]
    pub holder: Identity,
}

/// A call's time, split by what held the thread.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Held {
    /// The call's host time.
    pub total_ns: i64,
    /// In time order; consecutive pieces of one cause are merged.
    pub segments: Vec<Segment>,
    /// Holders that ended inside the call, before its own work began, with no sign that they released it
    /// (rule 1): they ran during the call but were not waited for. Each span is the part inside the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlapped: Vec<Segment>,
    /// The length of the call's own GPU work (`None`: it has none).
    pub own_work_ns: Option<i64>,
    /// How long its own GPU work ran while the thread was held.
    pub own_held_ns: i64,
    /// How much of its own work ran after the return: at least, at most (bounds from where its end may lie).
    pub own_after_return_ns: Option<[i64; 2]>,
    pub resolution_ns: i64,
    pub clock_error_ns: i64,
}

impl Held {
    /// The time held by one cause.
    pub fn ns(&self, cause: Cause) -> i64 {
        self.segments.iter().filter(|s| s.cause == cause).map(|s| s.span.len()).sum()
    }

    /// The waiting cause that ended last (what released the call), if it waited for anything.
    pub fn released_by(&self) -> Option<&Segment> {
        self.segments.iter().rev().find(|s| matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread))
    }

    /// The share of its own GPU work during which the thread was held; `None` where it has none, or where its
    /// work is too short for the readings to say (see [`Held::resolved_length_ns`]).
    pub fn own_share(&self) -> Option<f64> {
        let len = self.own_work_ns?;
        (len >= self.resolved_length_ns()).then(|| self.own_held_ns as f64 / len as f64)
    }

    /// How long its own work must last for the share it held to be decided: [`RESOLVED_LENGTH`] times the
    /// clock error, but at least the resolution.
    pub fn resolved_length_ns(&self) -> i64 {
        (RESOLVED_LENGTH * self.clock_error_ns).max(self.resolution_ns)
    }

    /// Whether the thread was held through (at least [`HELD_THROUGH`] of) its own GPU work, where the
    /// readings resolve it. `None`: no own work, or the readings cannot tell: its work lasted less than
    /// [`RESOLVED_LENGTH`] times the clock error, or the bounds of the part after the return lie on both sides
    /// of the line.
    pub fn held_through_own_work(&self) -> Option<bool> {
        let len = self.own_work_ns? as f64;
        let [after_lo, after_hi] = self.own_after_return_ns?;
        let margin = (1.0 - HELD_THROUGH) * len;
        if after_lo as f64 > margin {
            Some(false)
        } else if len >= self.resolved_length_ns() as f64 && after_hi as f64 <= margin {
            Some(true)
        } else {
            None
        }
    }
}

impl Held {
    /// What the readings say of the share of its own work that held the thread (`None`: no own work).
    pub fn own_reading(&self) -> Option<OwnReading> {
        self.own_work_ns?;
        Some(match (self.held_through_own_work(), self.own_share()) {
            (Some(_), Some(share)) => OwnReading::Decided(share),
            (None, Some(share)) => OwnReading::NearTheLine(share),
            (Some(false), None) => OwnReading::MostlyAfterReturn,
            (_, None) => OwnReading::TooShort,
        })
    }

    /// What held the thread, in a few words for a table column: each wait longer than the resolution
    /// ("20.0 ms for its stream"), then the share of its own work ("own work 99%", or "own work below
    /// resolution"); "nothing" where it waited for nothing and has no own work to speak of.
    pub fn summary(&self) -> String {
        let us = |ns: i64| crate::units::duration(ns as f64);
        let mut parts: Vec<String> = Vec::new();
        for cause in [Cause::Stream, Cause::Device, Cause::Thread] {
            let ns = self.ns(cause);
            if ns > self.resolution_ns {
                parts.push(format!("{} for {}", us(ns), cause.words()));
            }
        }
        match self.own_reading() {
            None => {}
            Some(OwnReading::Decided(share)) => parts.push(format!("own work {:.0}%", share * 100.0)),
            Some(OwnReading::NearTheLine(share)) => parts.push(format!("own work ≈{:.0}%", share * 100.0)),
            Some(OwnReading::MostlyAfterReturn) => parts.push("own work mostly after the return".into()),
            Some(OwnReading::TooShort) => parts.push("own work below resolution".into()),
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join(" · ")
        }
    }
}

/// What the readings say of the share of its own work that held the thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OwnReading {
    /// Decided: the thread was held for this share of its own work, clearly on one side of [`HELD_THROUGH`].
    Decided(f64),
    /// Long enough to measure, but the part after the return may lie on either side of the line.
    NearTheLine(f64),
    /// Too short to measure a share, but it clearly ran mostly after the return.
    MostlyAfterReturn,
    /// Too short for the readings to say anything about the share.
    TooShort,
}
