//! The launch log in the analysis (format 5): what a held call had ahead of it where the trace cannot hold
//! the record that would say it.
//!
//! By default the tracer records copies, memsets and the driver's overheads, and kernels only in windows
//! (`Line::KernelWindow`: start-up, and a while after a call held its thread); for each call held past the
//! bounded trace's threshold it writes the work enqueued last before the call began (`Line::Ahead`: in its
//! stream, or the event's, or in every stream for a device-wide wait). [`Log::holders`] turns that into
//! holders for the attribution, only where the trace cannot say it otherwise:
//! - the work named must be of a kind the trace holds no record of at that time (a kernel launched outside
//!   the windows, a graph, a host function, a stream's wait for another stream's event); a copy, a memset or
//!   a kernel launched inside a window has its record wherever it ran during a held call, so its absence says
//!   it was done before the call began;
//! - the wait's end must be known: the start of the record of work enqueued after it in its stream (the
//!   stream runs in order), the start of the call's own copy or memset, the end of the driver's record that
//!   the launch queue was full (room came then), or the call's return for a synchronization (which returns
//!   when what it waits for is done). Otherwise no holder is made, and where the
//!   call's function can wait that way, its class is `unknown` ([`Log::unknown_words`]), never a guess.
//!
//! A trace without a `record-kinds` line (every trace before format 5, and `--all-kernels`' traces) holds
//! every kernel's record: the log adds nothing there, and every verdict reads as before.

use super::format::{EnqueueKind, Enqueued, EventRecorded, KernelRecords, Line};
use crate::attribution::{Cause, Holder, Identity, Place, Span};
use std::collections::HashMap;

/// One held call's `ahead` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Ahead {
    pub stream: Option<u32>,
    pub event: Option<EventRecorded>,
    pub device: bool,
    /// Oldest first.
    pub work: Vec<Enqueued>,
}

/// Which kernels have a record in the trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Kernels {
    /// Every kernel (no `record-kinds` line, or it says so).
    #[default]
    All,
    /// Those launched in these windows (start, end).
    Windows(Vec<(i64, i64)>),
    None,
}

/// The launch log of a process's section, and which records it holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Log {
    by_corr: HashMap<u32, Ahead>,
    pub kernels: Kernels,
    /// The record kinds the trace holds (`None`: every kind).
    pub kinds: Option<Vec<String>>,
}

/// The functions that wait for what they synchronize and return when it is done.
const SYNCHRONIZE: [&str; 7] = [
    "cudaStreamSynchronize",
    "cuStreamSynchronize",
    "cudaEventSynchronize",
    "cuEventSynchronize",
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cuCtxSynchronize",
];

/// Whether `name` is a synchronization that returns when what it waits for is done.
pub fn synchronizes(name: &str) -> bool {
    SYNCHRONIZE.contains(&super::format::subscribed::base_name(name))
}

impl Log {
    /// Takes a line of the launch log (`ahead`, `record-kinds`, `kernel-window`); `false` for any other.
    pub fn read(&mut self, line: &Line) -> bool {
        match line {
            Line::Ahead { corr, stream, event, device, work, .. } => {
                self.by_corr.insert(
                    *corr,
                    Ahead { stream: *stream, event: event.clone(), device: *device, work: work.clone() },
                );
            }
            Line::RecordKinds { kinds, kernels } => {
                self.kinds = Some(kinds.clone());
                self.kernels = match (kernels, &self.kernels) {
                    (KernelRecords::All, _) => Kernels::All,
                    (KernelRecords::None, _) => Kernels::None,
                    // Windows that came before the kinds line are kept.
                    (KernelRecords::Windows, Kernels::Windows(w)) => Kernels::Windows(w.clone()),
                    (KernelRecords::Windows, _) => Kernels::Windows(Vec::new()),
                };
            }
            Line::KernelWindow { start, end, .. } => match &mut self.kernels {
                Kernels::Windows(w) => w.push((*start as i64, *end as i64)),
                other => {
                    if self.kinds.is_none() {
                        *other = Kernels::Windows(vec![(*start as i64, *end as i64)]);
                    }
                }
            },
            _ => return false,
        }
        true
    }

    /// Whether the trace holds every record (no launch log needed).
    pub fn whole(&self) -> bool {
        self.kernels == Kernels::All
    }

    /// The `ahead` line of a call with these correlation ids.
    pub fn of_call(&self, corrs: &[u32]) -> Option<&Ahead> {
        corrs.iter().find_map(|c| self.by_corr.get(c))
    }

    /// (correlation id, stream) of each held call whose stream its parameters named (or its event's record),
    /// for the calls that have no record saying it (a synchronization's, where those are off).
    pub fn streams(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.by_corr
            .iter()
            .filter_map(|(&corr, a)| a.stream.or(a.event.as_ref().and_then(|e| e.stream)).map(|s| (corr, s)))
    }

    /// The stream a call with these correlation ids named (or its event's record), where the trace does not
    /// hold every record.
    pub fn stream_of(&self, corrs: &[u32]) -> Option<u32> {
        if self.whole() {
            return None;
        }
        let a = self.of_call(corrs)?;
        a.stream.or(a.event.as_ref().and_then(|e| e.stream))
    }

    /// Where the trace does not hold every record and a call of these functions (its own, then those it
    /// called) and correlation ids is a synchronization its launch log names: whether it waits for the whole
    /// device (`true`) or its stream or event (`false`).
    pub fn sync_of<'a>(&self, mut functions: impl Iterator<Item = &'a str>, corrs: &[u32]) -> Option<bool> {
        if self.whole() || !functions.any(synchronizes) {
            return None;
        }
        self.of_call(corrs).map(|a| a.device)
    }

    /// The correlation ids of the held device-wide waits.
    pub fn device_waits(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_corr.iter().filter(|(_, a)| a.device).map(|(&c, _)| c)
    }

    /// Whether `e`, had it run while a held call ran, would have its record in the trace.
    fn recordable(&self, e: &Enqueued) -> bool {
        let kind = |k: &str| self.kinds.as_ref().is_none_or(|ks| ks.iter().any(|x| x == k));
        match e.kind {
            EnqueueKind::Kernel | EnqueueKind::Graph => match &self.kernels {
                Kernels::All => true,
                Kernels::None => false,
                Kernels::Windows(w) => w.iter().any(|&(s, t)| s <= e.start as i64 && e.end as i64 <= t),
            },
            EnqueueKind::Copy => kind("memcpy"),
            EnqueueKind::Memset => kind("memset"),
            EnqueueKind::HostFunction | EnqueueKind::EventWait | EnqueueKind::Other => false,
        }
    }

    /// The pieces of the call's `ahead` that the trace has no record of (`has_record`: whether a correlation
    /// id has a GPU record in the trace): the last in its stream, or each stream's last for a device-wide wait.
    fn unrecorded<'a>(&self, a: &'a Ahead, has_record: &dyn Fn(u32) -> bool) -> Vec<(usize, &'a Enqueued)> {
        let missing = |e: &Enqueued| !self.recordable(e) && !has_record(e.corr);
        if a.device {
            return a.work.iter().enumerate().filter(|(_, e)| missing(e)).collect();
        }
        // From the latest back: work that would have its record and has none was done before the call began,
        // and so was everything before it (the stream runs in order).
        for (k, e) in a.work.iter().enumerate().rev() {
            if missing(e) {
                return vec![(k, e)];
            }
            if !has_record(e.corr) {
                break;
            }
        }
        Vec::new()
    }

    /// The holders the launch log adds for a call: `call` its span, `corrs` its correlation ids, `sync` whether
    /// it is a synchronization, `bound` where the trace shows its wait ended otherwise (its own GPU work began,
    /// or room came in a full launch queue); `record_start` the earliest start of the records of a correlation
    /// id, where the trace holds one.
    pub fn holders(
        &self,
        call: Span,
        corrs: &[u32],
        sync: bool,
        bound: Option<i64>,
        record_start: &dyn Fn(u32) -> Option<i64>,
    ) -> Vec<Holder> {
        if self.whole() {
            return Vec::new();
        }
        let Some(a) = self.of_call(corrs) else { return Vec::new() };
        let missing = self.unrecorded(a, &|c| record_start(c).is_some());
        let Some(&(at, last)) = missing.iter().max_by_key(|(_, e)| (e.end, e.corr)) else { return Vec::new() };
        if a.device {
            if !sync {
                return Vec::new();
            }
            let start = missing.iter().map(|(_, e)| e.start as i64).min().unwrap_or(call.start);
            let more = missing.len() - 1;
            let others = match more {
                0 => String::new(),
                1 => "; and in 1 more stream".into(),
                n => format!("; and in {n} more streams"),
            };
            let stream = last.stream.map(|s| format!(" on stream {s}")).unwrap_or_default();
            let words = format!(
                "the work last enqueued on the device: {}{stream} (correlation {}{others})",
                what(last),
                last.corr
            );
            let name = format!("{}{stream}, {} last on the device", what(last), verb(last));
            return vec![holder(Cause::Device, Span::new(start, call.end), words, name, last.corr)];
        }
        // The stream runs in order: the work enqueued after it began once it was done.
        let later = a.work[at + 1..].iter().filter_map(|e| record_start(e.corr)).min();
        let Some(end) = later.or(bound).or(sync.then_some(call.end)) else { return Vec::new() };
        if end <= call.start {
            return Vec::new();
        }
        let whose =
            if a.event.is_some() && a.stream.is_none() { "of the event it waited for" } else { "in its stream" };
        let words = format!("the work ahead {whose}, last enqueued: {} (correlation {})", what(last), last.corr);
        let name = format!("{}, {} last before it", what(last), verb(last));
        vec![holder(Cause::Stream, Span::new((last.start as i64).min(call.start), end), words, name, last.corr)]
    }

    /// Why a call's class would rest on records the trace does not hold, where it would: it found nothing that
    /// held it (`waited`: false), `may_wait` (the lab saw its function wait for its stream or the device), and
    /// its launch log names work the trace has no record of, whose end nothing in the trace bounds.
    pub fn unknown_words(
        &self,
        corrs: &[u32],
        waited: bool,
        may_wait: bool,
        has_record: &dyn Fn(u32) -> bool,
    ) -> Option<String> {
        if self.whole() || waited || !may_wait {
            return None;
        }
        let a = self.of_call(corrs)?;
        let missing = self.unrecorded(a, has_record);
        let (_, last) = missing.iter().max_by_key(|(_, e)| (e.end, e.corr))?;
        let place = if a.device || a.stream.is_none() && a.event.is_none() { "on the device" } else { "ahead of it" };
        Some(format!(
            "what held it may be work the trace has no record of (kernel records were off then): the work last \
             enqueued {place} was {} (correlation {})",
            what(last),
            last.corr
        ))
    }
}

/// A holder from the log: `words` for the call's sentence, `name` what its kind is in a finding over many calls
/// ("the kernel gemm, launched last before it").
fn holder(cause: Cause, span: Span, words: String, name: String, corr: u32) -> Holder {
    Holder { cause, span, what: words, who: Identity { name, place: Place::LastEnqueued, corr: Some(corr) } }
}

/// A piece of work in words: "the kernel at::native::add_kernel", "a copy", "a host function".
fn what(e: &Enqueued) -> String {
    match e.kind {
        EnqueueKind::Kernel => match &e.kernel {
            Some(k) => format!("the kernel {}", super::demangle::kernel(k)),
            None => "a kernel".into(),
        },
        EnqueueKind::Copy => "a copy".into(),
        EnqueueKind::Memset => "a memset".into(),
        EnqueueKind::Graph => "a CUDA graph".into(),
        EnqueueKind::HostFunction => "a host function".into(),
        EnqueueKind::EventWait => "a wait for another stream's event".into(),
        EnqueueKind::Other => "work".into(),
    }
}

/// How the work came into its stream: "launched" (a kernel, a graph), "enqueued".
fn verb(e: &Enqueued) -> &'static str {
    match e.kind {
        EnqueueKind::Kernel | EnqueueKind::Graph | EnqueueKind::HostFunction => "launched",
        _ => "enqueued",
    }
}

/// Whether a holder comes from the launch log (not from a record).
pub fn logged(h: &Identity) -> bool {
    h.place == Place::LastEnqueued
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(corr: u32, start: u64, name: &str) -> Enqueued {
        Enqueued {
            corr,
            tid: 1,
            start,
            end: start + 3,
            kind: EnqueueKind::Kernel,
            stream: Some(13),
            kernel: Some(name.into()),
        }
    }

    fn log(windows: &[(u64, u64)], work: Vec<Enqueued>, device: bool) -> Log {
        let mut l = Log::default();
        l.read(&Line::RecordKinds {
            kinds: vec!["memcpy".into(), "memset".into(), "overhead".into()],
            kernels: KernelRecords::Windows,
        });
        for &(start, end) in windows {
            l.read(&Line::KernelWindow { start, end, why: crate::format::WindowWhy::Held });
        }
        l.read(&Line::Ahead { tid: 1, corr: 50, stream: Some(13), event: None, device, work });
        l
    }

    #[test]
    fn a_synchronization_waits_for_the_unrecorded_kernel_ahead_until_it_returns() {
        let l = log(&[], vec![kernel(40, 100, "_Z4spinv")], false);
        let hs = l.holders(Span::new(1_000, 50_000), &[50], true, None, &|_| None);
        let [h] = hs.as_slice() else { panic!("{hs:?}") };
        assert_eq!((h.cause, h.span), (Cause::Stream, Span::new(100, 50_000)));
        assert_eq!(h.what, "the work ahead in its stream, last enqueued: the kernel spin (correlation 40)");
        assert!(logged(&h.who));
        // Not a synchronization, and no own work: its end is not known, so no holder.
        assert!(l.holders(Span::new(1_000, 50_000), &[50], false, None, &|_| None).is_empty());
        // A copy behind it: the wait ends where the copy's record begins.
        let hs = l.holders(Span::new(1_000, 50_000), &[50], false, Some(30_000), &|_| None);
        assert_eq!(hs[0].span.end, 30_000);
    }

    #[test]
    fn a_kernel_launched_in_a_window_or_with_its_record_needs_no_log() {
        // Launched inside a window: its record would be in the trace had it run during the call.
        let l = log(&[(50, 200)], vec![kernel(40, 100, "_Z4spinv")], false);
        assert!(l.holders(Span::new(1_000, 50_000), &[50], true, None, &|_| None).is_empty());
        // Its record is in the trace: the records tell.
        let l = log(&[], vec![kernel(40, 100, "_Z4spinv")], false);
        assert!(l.holders(Span::new(1_000, 50_000), &[50], true, None, &|c| (c == 40).then_some(900)).is_empty());
        // A trace with every record: nothing added, whatever its ahead lines say.
        let mut whole = l.clone();
        whole.kernels = Kernels::All;
        assert!(whole.holders(Span::new(1_000, 50_000), &[50], true, None, &|_| None).is_empty());
    }

    #[test]
    fn work_recorded_after_the_unrecorded_kernel_bounds_its_end() {
        let mut copy = kernel(41, 200, "");
        copy.kind = EnqueueKind::Copy;
        copy.kernel = None;
        let l = log(&[], vec![kernel(40, 100, "_Z4spinv"), copy], false);
        // The copy enqueued after it began at 20 µs: the kernel was done then.
        let hs = l.holders(Span::new(1_000, 50_000), &[50], true, None, &|c| (c == 41).then_some(20_000));
        assert_eq!(hs[0].span, Span::new(100, 20_000));
        // Done before the call began: nothing held it.
        assert!(l.holders(Span::new(1_000, 50_000), &[50], true, None, &|c| (c == 41).then_some(500)).is_empty());
        // The copy has no record: it did not run while the call ran, so the kernel before it was done too.
        assert!(l.holders(Span::new(1_000, 50_000), &[50], true, None, &|_| None).is_empty());
    }

    #[test]
    fn a_device_wide_wait_names_the_latest_and_counts_the_other_streams() {
        let mut other = kernel(42, 300, "_Z5otherv");
        other.stream = Some(14);
        let l = log(&[], vec![kernel(40, 100, "_Z4spinv"), other], true);
        let hs = l.holders(Span::new(1_000, 50_000), &[50], true, None, &|_| None);
        assert_eq!(hs[0].cause, Cause::Device);
        assert_eq!(
            hs[0].what,
            "the work last enqueued on the device: the kernel other on stream 14 (correlation 42; and in 1 more stream)"
        );
        assert_eq!(hs[0].span, Span::new(100, 50_000));
    }

    #[test]
    fn a_call_whose_wait_has_no_known_end_is_unknown_where_its_function_can_wait() {
        let l = log(&[], vec![kernel(40, 100, "_Z4spinv")], false);
        let words = l.unknown_words(&[50], false, true, &|_| false).unwrap();
        assert!(words.contains("the kernel spin (correlation 40)"), "{words}");
        assert!(l.unknown_words(&[50], true, true, &|_| false).is_none());
        assert!(l.unknown_words(&[50], false, false, &|_| false).is_none());
        assert!(l.unknown_words(&[51], false, true, &|_| false).is_none());
    }
}
