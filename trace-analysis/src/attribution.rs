//! How long a call held its thread, and by what: the call's host time split into what it waited for.
//!
//! A pure function of intervals on one clock, so that any source of them can be fed to it: the lab's own
//! repetitions (`timing::RepTimes::scene`) and, as well, a trace of another program. The inputs are a
//! [`Scene`]: the call's host interval; its own GPU work (a transfer, a kernel), where it has some; and the
//! *holders*, what else was under way while the call ran: earlier work in the call's stream, work on other
//! streams, another thread's call. [`attribute`] answers with a [`Held`]: the call's time cut into
//! [`Segment`]s, each with the [`Cause`] that held the thread during it, and the share of the call's own GPU
//! work during which the thread was held ("held for 99% of its own transfer").
//!
//! The rules, in the order they apply:
//! 1. A holder held the call when it ended inside the call (later than the resolution after its start, no
//!    later than the resolution after its return) and no later than the call's own work began: once the
//!    call's own work runs, the call is past waiting for anything else. A holder still running at the return
//!    did not hold it: the call returned without waiting for it; nor did another thread's call that began
//!    after this one.
//!    In a trace of a program (not the lab's designed blocker, [`Release`]), the trace must also show that
//!    the call was *released* there: a holder counts only up to the last holder's end that a sign of the
//!    thread moving on follows within the slack ([`release_slack_ns`]): the call's return, its own GPU work
//!    beginning, or one of the scene's other signs (a module-loaded event on its thread, a driver call it
//!    made beginning or ending). A holder that ended inside the call with no such sign after it merely
//!    overlapped the call: it is kept in [`Held::overlapped`], never taken for a cause (a 256 MiB pinned
//!    allocation that ran on for 70 ms after another stream's kernel ended did not wait for that kernel).
//! 2. The waiting runs from the call's start to the last such end. Another thread's call covers the time it
//!    overlaps (a thread blocked on another thread waits for nothing else meanwhile: GPU work that ended in
//!    that time is what *that* call waited for); the rest of the waiting goes, piece by piece, to the holder
//!    that ended next.
//! 3. After the waiting, the time the call's own GPU work ran while the thread was still held is `Own`.
//! 4. What is left is the call's own host-side work (`Call`): the driver's overhead, staging copies made
//!    before the GPU starts, loading code.
//!
//! Every time has an uncertainty, the *resolution* (the clock fit's error plus how late after the return the
//! state was asked for): ends closer than that to the return cannot be put on either side of it.
//! [`Held::held_through_own_work`] says whether the thread was held through (at least [`HELD_THROUGH`] of)
//! its own work only where the readings resolve it: the work's start is placed to within the clock error, so
//! the share is decided only for work at least [`RESOLVED_LENGTH`] times longer than that error, and only
//! where the part of it after the return lies clearly on one side of the line.

use serde::Serialize;

/// The share of its own GPU work a call must have held the thread for to count as held through it: most of
/// it. (In the H200's recordings the shares of calls that held their transfer lie above 0.87, those of calls
/// that returned with the last part of it in flight below 0.76: the line sits in that gap, away from both.)
pub const HELD_THROUGH: f64 = 0.85;

/// How many times the clock error a call's own work must last for the share it held to be decided: its start
/// is placed on the host's clock to within the clock error either way, so below this its length is not known
/// to within a tenth.
pub const RESOLVED_LENGTH: i64 = 20;

/// A stretch of time on one clock, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start: i64,
    pub end: i64,
}

impl Span {
    pub fn new(start: i64, end: i64) -> Span {
        Span { start, end }
    }

    pub fn len(&self) -> i64 {
        (self.end - self.start).max(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How long the two overlap.
    pub fn overlap(&self, other: &Span) -> i64 {
        (self.end.min(other.end) - self.start.max(other.start)).max(0)
    }
}

/// What held the thread during part of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Earlier work in the call's own stream.
    Stream,
    /// Work on other streams, which the call does not depend on: the device drained.
    Device,
    /// Another thread's call.
    Thread,
    /// The call's own GPU work (its transfer, its kernel), while the thread waited for it.
    Own,
    /// None of those: the call's own host-side work (the driver's overhead, staging, loading).
    Call,
}

impl Cause {
    /// Its name in the JSON report, the Perfetto export and the page's CSS (`held-stream`, ...): as it
    /// serializes.
    pub fn slug(self) -> &'static str {
        match self {
            Cause::Stream => "stream",
            Cause::Device => "device",
            Cause::Thread => "thread",
            Cause::Own => "own",
            Cause::Call => "call",
        }
    }

    /// In words, for tables and sentences.
    pub fn words(self) -> &'static str {
        match self {
            Cause::Stream => "its stream",
            Cause::Device => "other streams",
            Cause::Thread => "another thread",
            Cause::Own => "its own work",
            Cause::Call => "the call itself",
        }
    }
}

/// Something under way while the call ran that may have held it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Holder {
    /// `Stream`, `Device` or `Thread`: what kind of thing it is, seen from the call.
    pub cause: Cause,
    pub span: Span,
    /// What it is, in words ("the 20 ms blocker kernel", "cuMemAllocHost on thread 2").
    pub what: String,
    /// Which it is, as data: what its words are made of.
    #[serde(skip)]
    pub who: Identity,
}

impl Holder {
    /// A holder known by its words alone (the lab's designed blocker, the other thread's call).
    pub fn worded(cause: Cause, span: Span, what: &str) -> Holder {
        Holder { cause, span, what: what.to_owned(), who: Identity::named(what) }
    }
}

/// Which thing a holder is, as data: what it is, where it ran seen from the call, and the correlation id that
/// tells it from others of its kind. Calls at one place each wait for their own piece of work: what theirs
/// have in common is the [`Identity::kind`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// What it is: the GPU work ("the kernel spin", "the 2GiB host → device copy") or the call ("cudaFree").
    pub name: String,
    pub place: Place,
    /// The correlation id of the GPU work or the call, where it has one.
    pub corr: Option<u32>,
}

/// Where a holder ran, seen from the call it held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// Not said apart from its name.
    #[default]
    Unsaid,
    /// Ahead of the call in the call's own stream.
    AheadInStream,
    /// Elsewhere, in words ("on stream 7", "on thread 2").
    On(String),
    /// Known from the launches alone (a trace's launch log): its name says where and how much is known.
    LastEnqueued,
}

impl Identity {
    /// Something known by its name alone, with no correlation id.
    pub fn named(name: &str) -> Identity {
        Identity { name: name.to_owned(), place: Place::Unsaid, corr: None }
    }

    /// What it is and where, without the correlation id ("the kernel spin ahead in its stream", "cudaFree on
    /// thread 2"): the same for every piece of one kind of work.
    pub fn kind(&self) -> String {
        match &self.place {
            Place::Unsaid | Place::LastEnqueued => self.name.clone(),
            Place::AheadInStream => format!("{} ahead in its stream", self.name),
            Place::On(place) => format!("{} {place}", self.name),
        }
    }
}

/// Everything known around one call, on one clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scene {
    /// The call's host interval: entered, returned.
    pub call: Span,
    /// The call's own GPU work, where it has some. Its start may be a lower bound (see rule 1).
    pub own: Option<Span>,
    /// Where the own work's end may lie, where the readings bound it more tightly or loosely than the
    /// resolution around `own.end` (a "done" answer right after the return says it ended before the answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own_end: Option<Span>,
    pub holders: Vec<Holder>,
    /// What shows that a holder released the call (rule 1).
    #[serde(default, skip_serializing_if = "Release::is_designed")]
    pub release: Release,
    /// How close two times may be and still not be told apart, in ns: the clock error plus how late after
    /// the return the state was asked for.
    pub resolution_ns: i64,
    /// How far the GPU's times may be off on the host's clock (0 where everything was read on one clock).
    pub clock_error_ns: i64,
}

/// What shows that a holder's end released the call.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Release {
    /// The lab's own experiments: the blocker is designed to be the one thing the call can wait for, and its
    /// end is read by an event, so a blocker that ended inside the call held it.
    #[default]
    Designed,
    /// A trace of a program: a holder counts only up to the last holder's end that the call's return, its
    /// own work's start or one of these signs of the thread moving on (times inside the call) follows
    /// within [`release_slack_ns`].
    Shown(Vec<i64>),
}

impl Release {
    pub fn is_designed(&self) -> bool {
        matches!(self, Release::Designed)
    }
}

/// How long after a holder's end a sign of the thread moving on may come and still show that the holder
/// released it: ten times the resolution, or a twentieth of the wait, whichever is longer (a thread woken
/// after a long wait takes a while to show it: a lazy module load released after 45 ms of waiting made its
/// next driver call 1.4 ms later on the H200).
pub fn release_slack_ns(call_start: i64, holder_end: i64, resolution_ns: i64) -> i64 {
    (10 * resolution_ns).max((holder_end - call_start) / 20)
}

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

/// Splits the call's time by what held the thread (the rules are in the module's doc).
pub fn attribute(scene: &Scene) -> Held {
    let call = scene.call;
    let res = scene.resolution_ns;
    let own = scene.own.map(|o| Span::new(o.start.max(call.start), o.end.max(call.start)));
    // Rule 1: the holders that ended inside the call, before its own work began.
    let own_began = own.map(|o| o.start).filter(|&s| s > call.start + res);
    let mut held: Vec<&Holder> = scene
        .holders
        .iter()
        .filter(|h| matches!(h.cause, Cause::Stream | Cause::Device | Cause::Thread))
        .filter(|h| h.span.start < call.end && h.span.end > call.start + res && h.span.end <= call.end + res)
        // Another thread's call that began after this one cannot have been what this one waited for.
        .filter(|h| h.cause != Cause::Thread || h.span.start <= call.start + res)
        .filter(|h| own_began.is_none_or(|s| h.span.end <= s + res))
        .collect();
    held.sort_by_key(|h| h.span.end);
    // The release: the last holder's end that a sign of the thread moving on follows within the slack.
    let released = |end: i64| match &scene.release {
        Release::Designed => true,
        Release::Shown(marks) => {
            let slack = release_slack_ns(call.start, end, res);
            marks.iter().copied().chain([call.end]).chain(own_began).any(|m| m >= end - res && m <= end + slack)
        }
    };
    let last_release = held.iter().rposition(|h| released(h.span.end));
    let overlapped: Vec<Segment> = held
        .split_off(last_release.map_or(0, |k| k + 1))
        .into_iter()
        .map(|h| Segment {
            cause: h.cause,
            span: Span::new(h.span.start.max(call.start), h.span.end.min(call.end)),
            what: h.what.clone(),
            holder: h.who.clone(),
        })
        .collect();
    let wait_end = held.last().map_or(call.start, |h| h.span.end.min(call.end));

    // Rule 2: the waiting, cut at every holder's end; a thread's call covers what it overlaps.
    let mut segments: Vec<Segment> = Vec::new();
    let mut push = |cause: Cause, span: Span, what: &str, holder: &Identity| {
        if span.is_empty() {
            return;
        }
        match segments.last_mut() {
            Some(last) if last.cause == cause && last.what == what && last.span.end == span.start => {
                last.span.end = span.end
            }
            _ => segments.push(Segment { cause, span, what: what.to_owned(), holder: holder.clone() }),
        }
    };
    let mut cuts: Vec<i64> = held.iter().flat_map(|h| [h.span.start, h.span.end]).collect();
    cuts.push(call.start);
    cuts.push(wait_end);
    cuts.retain(|&t| t >= call.start && t <= wait_end);
    cuts.sort_unstable();
    cuts.dedup();
    for w in cuts.windows(2) {
        let piece = Span::new(w[0], w[1]);
        let thread = held.iter().find(|h| h.cause == Cause::Thread && h.span.overlap(&piece) == piece.len());
        let next = held.iter().find(|h| h.span.end >= piece.end);
        if let Some(h) = thread.or(next) {
            push(h.cause, piece, &h.what, &h.who);
        }
    }

    // Rules 3 and 4: the rest of the call, its own work where that ran.
    let after_wait = Span::new(wait_end, call.end);
    let own_part = own.map(|o| Span::new(o.start.max(after_wait.start), o.end.min(after_wait.end)));
    let none = Identity::default();
    match own_part.filter(|p| !p.is_empty()) {
        Some(p) => {
            push(Cause::Call, Span::new(after_wait.start, p.start), "", &none);
            push(Cause::Own, p, "", &none);
            push(Cause::Call, Span::new(p.end, after_wait.end), "", &none);
        }
        None => push(Cause::Call, after_wait, "", &none),
    }
    let own_held_ns = own.map_or(0, |o| o.overlap(&call));
    let own_after_return_ns = own.map(|o| {
        let ends = scene.own_end.unwrap_or(Span::new(o.end - res, o.end + res));
        [(ends.start - call.end).clamp(0, o.len()), (ends.end - call.end).clamp(0, o.len())]
    });
    Held {
        total_ns: call.len(),
        segments,
        overlapped,
        own_work_ns: own.map(|o| o.len()),
        own_held_ns,
        own_after_return_ns,
        resolution_ns: res,
        clock_error_ns: scene.clock_error_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const US: i64 = 1_000;

    fn holder(cause: Cause, start: i64, end: i64, what: &str) -> Holder {
        Holder::worded(cause, Span::new(start, end), what)
    }

    fn scene(call: (i64, i64), own: Option<(i64, i64)>, holders: Vec<Holder>) -> Scene {
        Scene {
            call: Span::new(call.0, call.1),
            own: own.map(|(a, b)| Span::new(a, b)),
            own_end: None,
            holders,
            release: Release::Designed,
            resolution_ns: 5 * US,
            clock_error_ns: 2 * US,
        }
    }

    fn causes(h: &Held) -> Vec<(Cause, i64)> {
        h.segments.iter().map(|s| (s.cause, s.span.len())).collect()
    }

    #[test]
    fn a_pageable_copy_that_staged_its_whole_transfer_held_it_through() {
        // The seed's 10 MB pageable copy: nothing ahead, 1.45 ms of transfer, the call returns 10 µs before
        // its last chunk lands.
        let h = attribute(&scene((0, 1_440 * US), Some((5 * US, 1_450 * US)), vec![]));
        assert_eq!(h.own_held_ns, 1_435 * US);
        assert!(h.own_share().unwrap() > 0.99);
        assert_eq!(h.held_through_own_work(), Some(true));
        assert_eq!(causes(&h), vec![(Cause::Call, 5 * US), (Cause::Own, 1_435 * US)]);
        assert!(h.released_by().is_none());
    }

    #[test]
    fn waiting_for_the_stream_then_returning_before_the_own_work() {
        // A 20 ms kernel ahead; the call returns 30 µs after it, its 1 ms transfer still running.
        let h = attribute(&scene(
            (0, 20_030 * US),
            Some((20 * MS, 21 * MS)),
            vec![holder(Cause::Stream, -10 * US, 20 * MS, "the blocker")],
        ));
        assert_eq!(causes(&h), vec![(Cause::Stream, 20 * MS), (Cause::Own, 30 * US)]);
        assert_eq!(h.released_by().unwrap().what, "the blocker");
        assert_eq!(h.held_through_own_work(), Some(false));
    }

    #[test]
    fn a_holder_still_running_at_the_return_did_not_hold_it() {
        let h = attribute(&scene((0, 7 * US), Some((0, 20 * MS)), vec![holder(Cause::Stream, -5 * US, 20 * MS, "b")]));
        assert_eq!(causes(&h), vec![(Cause::Own, 7 * US)]);
        assert!(h.released_by().is_none());
        assert_eq!(h.held_through_own_work(), Some(false));
    }

    #[test]
    fn work_on_another_stream_that_ended_inside_the_call_drained_the_device() {
        let h = attribute(&scene((0, 20_010 * US), None, vec![holder(Cause::Device, -MS, 20 * MS, "k")]));
        assert_eq!(causes(&h), vec![(Cause::Device, 20 * MS), (Cause::Call, 10 * US)]);
        assert_eq!(h.own_share(), None);
    }

    #[test]
    fn a_holder_that_ended_after_the_own_work_began_did_not_hold_it() {
        // A long pageable copy whose transfer began at once; another stream's kernel ends inside it.
        let h =
            attribute(&scene((0, 300 * MS), Some((50 * US, 301 * MS)), vec![holder(Cause::Device, -1, 20 * MS, "k")]));
        assert!(h.released_by().is_none());
        assert_eq!(h.ns(Cause::Own), 300 * MS - 50 * US);
    }

    #[test]
    fn another_thread_covers_the_gpu_work_its_call_waited_for() {
        // The other thread's module load waited for the blocker (ended at 20 ms), then ended 100 µs later;
        // the launch returned 50 µs after that.
        let h = attribute(&scene(
            (0, 20_150 * US),
            Some((20_200 * US, 20_203 * US)),
            vec![
                holder(Cause::Stream, -30 * US, 20 * MS, "the blocker"),
                holder(Cause::Thread, -50 * US, 20_100 * US, "cuModuleLoadData"),
            ],
        ));
        assert_eq!(causes(&h), vec![(Cause::Thread, 20_100 * US), (Cause::Call, 50 * US)]);
        assert_eq!(h.released_by().unwrap().cause, Cause::Thread);
    }

    #[test]
    fn another_threads_call_that_began_after_this_one_did_not_hold_it() {
        let h = attribute(&scene((0, 100 * US), None, vec![holder(Cause::Thread, 20 * US, 60 * US, "t")]));
        assert!(h.released_by().is_none(), "{h:?}");
        assert_eq!(causes(&h), vec![(Cause::Call, 100 * US)]);
    }

    #[test]
    fn waits_are_cut_at_each_holders_end() {
        let h = attribute(&scene(
            (0, 30 * MS),
            None,
            vec![holder(Cause::Stream, -1, 10 * MS, "a"), holder(Cause::Device, -1, 29 * MS, "b")],
        ));
        assert_eq!(causes(&h), vec![(Cause::Stream, 10 * MS), (Cause::Device, 19 * MS), (Cause::Call, MS)]);
        assert_eq!(h.released_by().unwrap().what, "b");
    }

    #[test]
    fn short_own_work_is_below_resolution_whichever_side_its_end_lies() {
        // 15 µs of own work ending 2 µs before or after the return: not resolved either way.
        for d in [-2 * US, 2 * US] {
            let h = attribute(&scene((0, 100 * US), Some((85 * US + d, 100 * US + d)), vec![]));
            assert_eq!(h.held_through_own_work(), None, "d = {d}");
        }
        // 1 ms of own work ending 2 µs after the return: held through, whichever side the end lies.
        let h = attribute(&scene((0, 1_100 * US), Some((100 * US, 1_102 * US)), vec![]));
        assert_eq!(h.held_through_own_work(), Some(true));
        // A 40 µs transfer left 30 µs after the return: clearly returned before most of it.
        let h = attribute(&scene((0, 10 * US), Some((0, 40 * US)), vec![]));
        assert_eq!(h.held_through_own_work(), Some(false));
    }

    #[test]
    fn a_done_answer_right_after_the_return_bounds_the_end() {
        // 60 µs of work; a query 1 µs after the return found it done: at most 1 µs ran after the return.
        let mut s = scene((0, 100 * US), Some((40 * US, 100 * US)), vec![]);
        assert_eq!(attribute(&s).held_through_own_work(), Some(true));
        s.own_end = Some(Span::new(40 * US, 101 * US));
        assert_eq!(attribute(&s).own_after_return_ns, Some([0, US]));
        // With a clock error of 4 µs, 60 µs of work is too short to decide the share.
        s.clock_error_ns = 4 * US;
        assert_eq!(attribute(&s).held_through_own_work(), None);
    }

    #[test]
    fn the_segments_add_up_to_the_call() {
        let h = attribute(&scene(
            (0, 30 * MS),
            Some((25 * MS, 40 * MS)),
            vec![holder(Cause::Stream, -1, 24 * MS, "a"), holder(Cause::Thread, 5 * MS, 12 * MS, "t")],
        ));
        assert_eq!(h.segments.iter().map(|s| s.span.len()).sum::<i64>(), h.total_ns);
        assert_eq!(h.segments.first().unwrap().span.start, 0);
        assert!(h.segments.windows(2).all(|w| w[0].span.end == w[1].span.start));
    }

    fn shown(mut s: Scene, marks: Vec<i64>) -> Scene {
        s.release = Release::Shown(marks);
        s
    }

    #[test]
    fn in_a_trace_a_holder_with_no_sign_of_release_after_it_only_overlapped() {
        // A 130 ms pinned allocation; another stream's kernel ended 50 ms in; nothing happened on the thread
        // until the return, 80 ms later.
        let s = scene((0, 130 * MS), None, vec![holder(Cause::Device, -MS, 50 * MS, "k")]);
        assert_eq!(causes(&attribute(&s)), vec![(Cause::Device, 50 * MS), (Cause::Call, 80 * MS)]);
        let h = attribute(&shown(s, vec![]));
        assert_eq!(causes(&h), vec![(Cause::Call, 130 * MS)]);
        assert!(h.released_by().is_none());
        assert_eq!(h.overlapped.len(), 1);
        assert_eq!(h.overlapped[0].span, Span::new(0, 50 * MS));
    }

    #[test]
    fn in_a_trace_a_sign_within_the_slack_shows_the_release() {
        // A lazy load waited 45 ms for a kernel; its next driver call began 1.4 ms after the kernel ended
        // (inside the slack of 45 ms / 20 = 2.25 ms), and it returned 10 ms later.
        let s = scene((0, 56 * MS), None, vec![holder(Cause::Device, -MS, 45 * MS, "k")]);
        let h = attribute(&shown(s.clone(), vec![46_400 * US]));
        assert_eq!(causes(&h), vec![(Cause::Device, 45 * MS), (Cause::Call, 11 * MS)]);
        assert!(h.overlapped.is_empty());
        // 3 ms after is too late: not shown.
        let h = attribute(&shown(s, vec![48 * MS]));
        assert!(h.released_by().is_none());
        assert_eq!(release_slack_ns(0, 45 * MS, 5 * US), 2_250 * US);
        assert_eq!(release_slack_ns(0, 100 * US, 5 * US), 50 * US);
    }

    #[test]
    fn in_a_trace_holders_before_the_shown_release_keep_their_share() {
        // Two kernels ahead in the stream; the call returned right after the second: both held it.
        let s = scene(
            (0, 30 * MS),
            None,
            vec![holder(Cause::Stream, -1, 10 * MS, "a"), holder(Cause::Stream, -1, 29_990 * US, "b")],
        );
        let h = attribute(&shown(s, vec![]));
        assert_eq!(causes(&h), vec![(Cause::Stream, 10 * MS), (Cause::Stream, 19_990 * US), (Cause::Call, 10 * US)]);
        // A third holder that ended between the release and the return with no sign after it: overlapped.
        let s = scene(
            (0, 30 * MS),
            None,
            vec![holder(Cause::Stream, -1, 10 * MS, "a"), holder(Cause::Device, -1, 20 * MS, "c")],
        );
        let h = attribute(&shown(s, vec![10_010 * US]));
        assert_eq!(h.released_by().unwrap().what, "a");
        assert_eq!(h.overlapped.iter().map(|o| o.what.as_str()).collect::<Vec<_>>(), ["c"]);
    }

    #[test]
    fn a_causes_slug_is_how_it_serializes() {
        for c in [Cause::Stream, Cause::Device, Cause::Thread, Cause::Own, Cause::Call] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.slug());
        }
    }
}
