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

mod held;
pub use held::{Held, OwnReading, Segment, HELD_THROUGH, RESOLVED_LENGTH};

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
mod tests;
