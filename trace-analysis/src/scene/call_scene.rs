//! Each call's [`Scene`] for the attribution (`Program::scene`): its own work, the GPU work enqueued before it
//! that overlapped it (in its stream, or in another), the other threads' calls in flight when it began, and
//! the marks that show when the thread moved on (module loads, the driver calls inside it, the driver's
//! overhead records, a synchronization's ends of what it waits for, the launch log's holders).

use super::{Program, CLOCK_ERROR_NS, RESOLUTION_NS};
use crate::attribution::{release_slack_ns, Cause, Holder, Identity, Place, Release, Scene, Span};
use crate::format::OverheadKind;
use crate::records::{Overhead, Work};

impl Program {
    /// Everything known around call `i`, for `attribution::attribute`.
    ///
    /// Another thread's call in flight is a holder, unless GPU work among this call's holders released it
    /// (ended within the release slack before it returned): then both calls waited for that work, and the
    /// work is the cause, with the other thread named beside it.
    pub fn scene(&self, i: usize) -> Scene {
        self.scene_with(i, &self.own_work(i), self.stream_of(i), &self.overheads_of(i))
    }

    /// [`Program::scene`] of call `i`, whose own work, stream and overhead records are these.
    pub(crate) fn scene_with(&self, i: usize, own: &[&Work], stream: Option<u32>, overheads: &[&Overhead]) -> Scene {
        let c = &self.calls[i];
        let own_span = (!own.is_empty()).then(|| {
            Span::new(
                own.iter().map(|w| w.span.start).min().unwrap_or(0),
                own.iter().map(|w| w.span.end).max().unwrap_or(0),
            )
        });
        let first_corr = c.corrs.iter().copied().min().unwrap_or(c.corr);
        let work: Vec<&Work> = self.work_during(c.span).filter(|w| w.corr < first_corr).collect();
        let mut also_waited: Vec<Vec<String>> = vec![Vec::new(); work.len()];
        let mut threads: Vec<Holder> = Vec::new();
        for o in self.calls_at(c.span.start).filter(|o| o.tid != c.tid) {
            let released_by = work.iter().position(|w| {
                w.span.end > c.span.start + RESOLUTION_NS
                    && w.span.end <= o.span.end + RESOLUTION_NS
                    && o.span.end - w.span.end <= release_slack_ns(o.span.start, w.span.end, RESOLUTION_NS)
            });
            match released_by {
                Some(k) => also_waited[k].push(format!("{}'s {}", self.threads.words(o.tid), o.name)),
                None => threads.push(traced_holder(
                    Cause::Thread,
                    o.span,
                    Identity {
                        name: o.name.clone(),
                        place: Place::On(format!("on {}", self.threads.words(o.tid))),
                        corr: Some(o.corr),
                    },
                    &[],
                )),
            }
        }
        let mut holders: Vec<Holder> = work
            .iter()
            .zip(&also_waited)
            .map(|(w, others)| {
                let same = stream == Some(w.stream);
                let place =
                    if same { Place::AheadInStream } else { Place::On(format!("on {}", self.stream_words(w.stream))) };
                let who = Identity { name: w.words(), place, corr: Some(w.corr) };
                traced_holder(if same { Cause::Stream } else { Cause::Device }, w.span, who, others)
            })
            .collect();
        holders.extend(threads);
        let mut marks = self.module_load_times_in(i);
        marks.extend(c.inner_spans.iter().flat_map(|s| [s.start, s.end]));
        // The driver's own word on when the thread moved on: a load began (what ended right before it, the
        // load waited for: load after drain), room came in a full launch queue.
        for o in overheads {
            match o.kind {
                _ if o.is_load() => marks.push(o.span.start),
                OverheadKind::CommandBufferFull => marks.push(o.span.end),
                _ => {}
            }
        }
        // A lazy module load waits for the work under way when it began, before it loads (`lazy`).
        marks.extend(self.lazy_load(i).filter(|l| l.waited).and_then(|l| l.waited_until));
        // A synchronization waits for its stream (a context synchronization, for everything) by what it is,
        // and its record says it did: the ends of what it waits for are releases, even where the stream's
        // host functions (which the trace does not see) ran on after its last GPU work.
        // Where the trace does not hold every record, what the launch log says was ahead (`ahead`).
        let logged_sync = self.log.sync_of(std::iter::once(&c.name).chain(&c.inner).map(String::as_str), &c.corrs);
        // The wait's end where the trace shows it: its own work began, or room came in a full launch queue.
        let room = overheads.iter().filter(|o| o.kind == OverheadKind::CommandBufferFull).map(|o| o.span.end).max();
        let bound = own_span.map(|o| o.start).or(room);
        holders.extend(self.log.holders(c.span, &c.corrs, logged_sync.is_some(), bound, &|k| self.record_start(k)));
        let context_sync =
            c.corrs.iter().any(|corr| self.index.context_syncs.contains(corr)) || logged_sync == Some(true);
        let stream_sync = stream.is_some()
            && (c.corrs.iter().any(|corr| self.index.stream_by_corr.contains_key(corr)) || logged_sync == Some(false));
        marks.extend(
            holders.iter().filter(|h| context_sync || (stream_sync && h.cause == Cause::Stream)).map(|h| h.span.end),
        );
        Scene {
            call: c.span,
            own: own_span,
            own_end: None,
            holders,
            release: Release::Shown(marks),
            resolution_ns: RESOLUTION_NS,
            clock_error_ns: CLOCK_ERROR_NS,
        }
    }
}

/// A holder in a trace, in words: what it is and where, its correlation id, and the other threads' calls that
/// waited for it too ("the kernel spin ahead in its stream, correlation 10 (thread 2's cudaFree waited for it
/// too)").
fn traced_holder(cause: Cause, span: Span, who: Identity, others: &[String]) -> Holder {
    let mut what = who.kind();
    if let Some(corr) = who.corr {
        what.push_str(&format!(", correlation {corr}"));
    }
    if !others.is_empty() {
        what.push_str(&format!(" ({} waited for it too)", others.join(", ")));
    }
    Holder { cause, span, what, who }
}
