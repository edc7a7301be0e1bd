//! A traced process's GPU records as the analysis reads them: the work (copies, memsets, kernels) and its
//! words, CUPTI's copy and memory kinds in words, the driver's overhead records (format 4), and why some
//! records are missing from a trace ([`Lost`]).

use super::format::cupti_kinds::{copy, memory};
use super::format::OverheadKind;
use crate::attribution::Span;
use crate::units::size_words;

/// What a GPU record did.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkKind {
    /// CUPTI's copy, source and destination kinds (see `format::Line::Memcpy`).
    Copy {
        copy_kind: u8,
        src_kind: u8,
        dst_kind: u8,
    },
    Memset,
    Kernel {
        name: String,
    },
}

/// One GPU record.
#[derive(Clone, Debug, PartialEq)]
pub struct Work {
    pub kind: WorkKind,
    pub bytes: u64,
    pub span: Span,
    pub stream: u32,
    pub corr: u32,
}

impl Work {
    /// In words: "the 2 GiB host → device copy (pinned → device)", "the kernel spin".
    pub fn words(&self) -> String {
        match &self.kind {
            WorkKind::Copy { copy_kind, src_kind, dst_kind } => format!(
                "the {} {} copy ({} → {})",
                size_words(self.bytes),
                copy_words(*copy_kind),
                memory_words(*src_kind),
                memory_words(*dst_kind)
            ),
            WorkKind::Memset => format!("the {} memset", size_words(self.bytes)),
            WorkKind::Kernel { name } => format!("the kernel {}", super::demangle::kernel(name)),
        }
    }

    /// In words, as call `name` made it: the pinned → pageable leg of a read from the device (a `cuMemcpyDtoH*`
    /// whose record says host → host, as XLA's reads are) is that read; else [`Work::words`].
    pub fn words_for(&self, name: &str) -> String {
        match self.kind {
            WorkKind::Copy { copy_kind: copy::HTOH, dst_kind: memory::PAGEABLE, .. }
                if super::functions::reads_device(name) =>
            {
                format!("the {} device → host read (its last leg: pinned → pageable)", size_words(self.bytes))
            }
            _ => self.words(),
        }
    }

    /// A copy from or to managed memory.
    pub fn managed(&self) -> bool {
        matches!(self.kind, WorkKind::Copy { src_kind, dst_kind, .. } if src_kind == 5 || dst_kind == 5)
    }

    /// A copy from or to pageable host memory (which the driver stages on the calling thread).
    pub fn pageable(&self) -> bool {
        matches!(self.kind, WorkKind::Copy { src_kind, dst_kind, .. } if src_kind == 1 || dst_kind == 1)
    }
}

/// CUPTI's copy kinds in words.
pub fn copy_words(kind: u8) -> &'static str {
    match kind {
        copy::HTOD => "host → device",
        copy::DTOH => "device → host",
        copy::HTOA => "host → array",
        copy::ATOH => "array → host",
        copy::DTOD => "device → device",
        copy::PTOP => "peer",
        copy::HTOH => "host → host",
        _ => "memory",
    }
}

/// CUPTI's memory kinds in words.
pub fn memory_words(kind: u8) -> &'static str {
    match kind {
        memory::PAGEABLE => "pageable",
        memory::PINNED => "pinned",
        memory::DEVICE => "device",
        memory::ARRAY => "array",
        memory::MANAGED => "managed",
        memory::DEVICE_STATIC => "device static",
        memory::MANAGED_STATIC => "managed static",
        _ => "unknown",
    }
}

/// One of the driver's overhead records (CUPTI's, format 4).
#[derive(Clone, Debug, PartialEq)]
pub struct Overhead {
    pub kind: OverheadKind,
    pub span: Span,
    /// The call that caused it.
    pub corr: Option<u32>,
    pub stream: Option<u32>,
    /// For a full launch queue: the command buffer's length.
    pub queue_length: Option<u32>,
}

impl Overhead {
    /// A module or function loaded at a first use.
    pub fn is_load(&self) -> bool {
        matches!(self.kind, OverheadKind::LazyFunctionLoading | OverheadKind::RuntimeTriggeredModuleLoading)
    }

    /// In words, for `--explain`: "CUPTI's overhead record LAZY_FUNCTION_LOADING: the function's code loaded
    /// at its first use".
    pub fn words(&self) -> String {
        let what = match self.kind {
            OverheadKind::LazyFunctionLoading => "a function's code loaded at its first use (lazy loading)".into(),
            OverheadKind::RuntimeTriggeredModuleLoading => "the runtime loaded a module at its first use".into(),
            OverheadKind::CommandBufferFull => match self.queue_length {
                Some(n) => format!("the launch queue (a command buffer of {n}) was full: the call waited for room"),
                None => "the launch queue was full: the call waited for room".into(),
            },
            OverheadKind::DriverCompiler => "the driver compiled code".into(),
            OverheadKind::Other => "an overhead of a kind this async-lab does not know".into(),
        };
        let name = serde_json::to_value(self.kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        format!("CUPTI's overhead record {name}: {what}")
    }
}

/// Why some of a process's GPU records are missing from its trace.
#[derive(Clone, Debug, PartialEq)]
pub enum Lost {
    /// The section has no `end` line: the program was killed (or died by `signal`) before CUPTI handed its
    /// last records back.
    Cut { signal: Option<String> },
    /// CUPTI dropped this many records (its buffers were full).
    Dropped(u64),
}

impl Lost {
    /// Why, in words: "the program was killed", "CUPTI dropped 12 records".
    pub fn words(&self) -> String {
        match self {
            Lost::Cut { signal: None } => "the program was killed".into(),
            Lost::Cut { signal: Some(s) } if s == "_exit" => "the program ended by _exit".into(),
            Lost::Cut { signal: Some(s) } => format!("the program died by {s}"),
            Lost::Dropped(n) => format!("CUPTI dropped {n} record{}", if *n == 1 { "" } else { "s" }),
        }
    }
}
