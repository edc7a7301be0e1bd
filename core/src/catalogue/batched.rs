//! Batched copies (rules BC1, BC2): `cuMemcpyBatchAsync` (CUDA 12.8) of one buffer in `PIECES` pieces, host →
//! device and device → host, from pageable and from pinned memory, with each source access order, behind a
//! blocker in the same stream; and the same pieces as one async copy each, what the batch replaces. A piece
//! is a copy of the copy family (`CopyFacts`): the pieces one by one take its calls and rules.

use super::copies::{CopyFacts, Entry, Form, Residency};
use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Direction, Family, HostKind, StreamKind};
use crate::units::format_size;
use serde::{Deserialize, Serialize};

/// The buffer every case copies, and the number of pieces it goes in.
pub const BYTES: u64 = 4 << 20;
pub const PIECES: u64 = 8;

/// When the batch may read its source (`CUmemcpySrcAccessOrder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SrcOrder {
    /// In stream order, like any async copy.
    Stream,
    /// Only during the call: every read is done when it returns.
    DuringCall,
    /// At any time, also after the call returns.
    Any,
}

/// How the pieces are handed to the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Submit {
    /// One `cuMemcpyBatchAsync` with this source access order for every piece.
    Batch(SrcOrder),
    /// The same pieces as one `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync` each, one after another, timed together:
    /// what the batch replaces.
    OneByOne,
}

impl Submit {
    fn slug(self) -> &'static str {
        match self {
            Submit::Batch(SrcOrder::Stream) => "stream",
            Submit::Batch(SrcOrder::DuringCall) => "during-call",
            Submit::Batch(SrcOrder::Any) => "any",
            Submit::OneByOne => "one-by-one",
        }
    }
}

/// The batch call through `api`.
fn batch_call(api: Api) -> &'static str {
    match api {
        Api::Driver => "cuMemcpyBatchAsync",
        Api::Runtime => "cudaMemcpyBatchAsync",
    }
}

/// One batched-copy experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFacts {
    /// Host → device (`true`) or device → host.
    pub htod: bool,
    pub host: HostKind,
    pub submit: Submit,
    pub bytes: u64,
}

impl BatchFacts {
    pub fn direction(&self) -> Direction {
        if self.htod {
            Direction::HtoD
        } else {
            Direction::DtoH
        }
    }

    /// The single copy each piece is when made one by one (the copy family's case of that size).
    pub fn piece_copy(&self) -> CopyFacts {
        CopyFacts {
            form: Form::Async,
            dir: self.direction(),
            host: Some(self.host),
            stream: StreamKind::NonBlocking,
            blocker: BlockerPlacement::Same,
            bytes: self.bytes / PIECES,
            entry: Entry::Typed,
            residency: Residency::HostTouched,
        }
    }

    fn direction_words(&self) -> &'static str {
        if self.htod {
            "host → device, from"
        } else {
            "device → host, into"
        }
    }
}

impl Experiment for BatchFacts {
    fn family(&self) -> Family {
        Family::Batch
    }

    fn id(&self) -> String {
        format!(
            "batch/{}/{}/{}/nonblocking/same/{}",
            self.direction().slug(),
            self.host.slug(),
            self.submit.slug(),
            format_size(self.bytes)
        )
    }

    fn call(&self, api: Api) -> &'static str {
        match self.submit {
            Submit::Batch(_) => batch_call(api),
            Submit::OneByOne => self.piece_copy().call(api),
        }
    }

    fn runtime_twin(&self) -> bool {
        true
    }

    fn rule(&self, api: Api) -> (&'static str, Expected) {
        match self.submit {
            // The "during the call" order promises that the source is read by the return: for a host source
            // the staging probe can see whether it was.
            Submit::Batch(SrcOrder::DuringCall) if self.htod => {
                ("BC2", Expected::classes(&[Staged, WaitedForStream, Blocking]))
            }
            Submit::Batch(_) => ("BC1", Expected::undocumented()),
            // Each call is an ordinary async copy: the copy family's rule for one piece holds for each, and so
            // for the last, whose return ends the timed span.
            Submit::OneByOne => self.piece_copy().rule(api),
        }
    }

    fn what(&self, api: Api) -> String {
        let what = match self.submit {
            Submit::Batch(_) => format!(
                "{} of {} in {PIECES} pieces, {} {} memory, source access order {}, with a blocker ahead of it in the same stream",
                self.call(api),
                format_size(self.bytes),
                self.direction_words(),
                self.host.slug(),
                self.submit.slug()
            ),
            Submit::OneByOne => format!(
                "the same {} in {PIECES} pieces as {PIECES} {} calls one after another, timed together, {} {} memory, with a blocker ahead of them in the same stream: what one {} replaces",
                format_size(self.bytes),
                self.call(api),
                self.direction_words(),
                self.host.slug(),
                batch_call(api)
            ),
        };
        format!("{what}{}", api_words(api))
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::behind(StreamKind::NonBlocking, BlockerPlacement::Same);
        l.host_memory = Some(self.host);
        l.direction = Some(self.direction());
        l.bytes = self.bytes;
        l
    }
}

impl From<BatchFacts> for Facts {
    fn from(f: BatchFacts) -> Facts {
        Facts::Batch(f)
    }
}

/// Both directions, pageable and pinned memory, each source access order and the pieces one by one.
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for htod in [true, false] {
        for host in [HostKind::Pageable, HostKind::Pinned] {
            for submit in [
                Submit::Batch(SrcOrder::Stream),
                Submit::Batch(SrcOrder::DuringCall),
                Submit::Batch(SrcOrder::Any),
                Submit::OneByOne,
            ] {
                v.push(Case::driver(BatchFacts { htod, host, submit, bytes: BYTES }));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(c: &Case) -> BatchFacts {
        let Facts::Batch(f) = c.facts else { panic!("{} is not a batch case", c.id()) };
        f
    }

    #[test]
    fn every_order_kind_and_direction_once_and_only_host_sources_read_during_the_call_have_a_rule() {
        let cases = cases();
        assert_eq!(cases.len(), 16);
        for c in &cases {
            let op = facts(c);
            let (_, expected) = c.rule();
            let documented = matches!(expected, Expected::Classes { .. });
            match op.submit {
                Submit::Batch(order) => {
                    assert_eq!(documented, op.htod && order == SrcOrder::DuringCall, "{}", c.id());
                    assert_eq!(c.call(), "cuMemcpyBatchAsync");
                }
                // The pieces one by one are ordinary async copies, which the copy family's rules cover.
                Submit::OneByOne => {
                    assert!(documented, "{}", c.id());
                    let want = if op.htod { "cuMemcpyHtoDAsync" } else { "cuMemcpyDtoHAsync" };
                    assert_eq!(c.call(), want, "{}", c.id());
                    assert!(c.id().contains("/one-by-one/"), "{}", c.id());
                }
            }
            let l = op.layout();
            assert!(l.blocker_ahead && l.stream == Some(StreamKind::NonBlocking));
        }
    }

    #[test]
    fn the_pieces_one_by_one_follow_the_copy_rules_of_one_piece() {
        let one_by_one: Vec<Case> = cases().into_iter().filter(|c| facts(c).submit == Submit::OneByOne).collect();
        assert_eq!(one_by_one.len(), 4);
        let rule = |htod: bool, host: HostKind| {
            one_by_one.iter().find(|c| facts(c).htod == htod && facts(c).host == host).map(|c| c.rule().0).unwrap()
        };
        // 512 KiB pieces: above the 64 KiB of rule G1; pageable copies stage (A2), pinned ones are async (A1).
        assert_eq!(rule(true, HostKind::Pageable), "A2");
        assert_eq!(rule(false, HostKind::Pageable), "A2");
        assert_eq!(rule(true, HostKind::Pinned), "A1");
        assert_eq!(rule(false, HostKind::Pinned), "A1");
    }

    #[test]
    fn a_runtime_twin_names_the_runtime_calls_in_its_words() {
        for c in cases() {
            let twin = c.runtime_twin().unwrap_or_else(|| panic!("{} has no runtime twin", c.id()));
            let what = twin.facts.what(twin.api);
            assert!(twin.call().starts_with("cuda"), "{}", twin.call());
            assert!(what.contains(twin.call()) && !what.contains("cuMemcpy"), "{what}");
        }
    }
}
