//! Attributes and limits while work is in flight (rules LM1–LM4): changing the per-thread stack size and the
//! printf FIFO, a kernel's maximum dynamic shared memory (on an idle kernel and on the kernel running right
//! now), and the queries programs make all the time. None takes a stream: each is timed next to a blocker on
//! the legacy stream and on a non-blocking stream. Every call has a runtime twin but the running kernel's
//! attribute (`LimitCall::runtime_can_name_kernel`).

use super::{api_words, Case, Experiment, Facts, Layout};
use crate::api::Api;
use crate::class::Class::*;
use crate::rules::Expected;
use crate::setup::{BlockerPlacement, Family, StreamKind};
use serde::{Deserialize, Serialize};

/// The call a case measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitCall {
    /// `cuCtxSetLimit(CU_LIMIT_STACK_SIZE)` from 1 KiB to 8 KiB per thread.
    SetStackSize,
    /// `cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE)` from 1 MiB to 2 MiB.
    SetPrintfFifo,
    /// `cuCtxGetLimit(CU_LIMIT_STACK_SIZE)`.
    GetStackSize,
    /// `cuMemGetInfo`.
    MemGetInfo,
    /// `cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)`.
    DeviceGetAttribute,
    /// `cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)` of a kernel that is not running (`checksum`).
    FuncSetAttributeIdle,
    /// The same on the blocker's own kernel, which is running during the call.
    FuncSetAttributeRunning,
}

impl LimitCall {
    pub const ALL: [LimitCall; 7] = [
        LimitCall::SetStackSize,
        LimitCall::SetPrintfFifo,
        LimitCall::GetStackSize,
        LimitCall::MemGetInfo,
        LimitCall::DeviceGetAttribute,
        LimitCall::FuncSetAttributeIdle,
        LimitCall::FuncSetAttributeRunning,
    ];

    fn slug(self) -> &'static str {
        match self {
            LimitCall::SetStackSize => "set-limit/stack-size",
            LimitCall::SetPrintfFifo => "set-limit/printf-fifo",
            LimitCall::GetStackSize => "get-limit/stack-size",
            LimitCall::MemGetInfo => "mem-get-info",
            LimitCall::DeviceGetAttribute => "device-get-attribute/sm-count",
            LimitCall::FuncSetAttributeIdle => "func-set-attribute/idle-kernel",
            LimitCall::FuncSetAttributeRunning => "func-set-attribute/running-kernel",
        }
    }

    /// The function the call goes through, in `api` (the runtime's on the same primary context).
    pub fn name(self, api: Api) -> &'static str {
        use LimitCall::*;
        match (self, api) {
            (SetStackSize | SetPrintfFifo, Api::Driver) => "cuCtxSetLimit",
            (SetStackSize | SetPrintfFifo, Api::Runtime) => "cudaDeviceSetLimit",
            (GetStackSize, Api::Driver) => "cuCtxGetLimit",
            (GetStackSize, Api::Runtime) => "cudaDeviceGetLimit",
            (MemGetInfo, Api::Driver) => "cuMemGetInfo",
            (MemGetInfo, Api::Runtime) => "cudaMemGetInfo",
            (DeviceGetAttribute, Api::Driver) => "cuDeviceGetAttribute",
            (DeviceGetAttribute, Api::Runtime) => "cudaDeviceGetAttribute",
            (FuncSetAttributeIdle | FuncSetAttributeRunning, Api::Driver) => "cuFuncSetAttribute",
            (FuncSetAttributeIdle | FuncSetAttributeRunning, Api::Runtime) => "cudaFuncSetAttribute",
        }
    }

    /// Whether the runtime can name the kernel this call changes: only one it loaded itself, not the
    /// blocker's (a driver module's function), so the running-kernel case has no runtime twin.
    pub fn runtime_can_name_kernel(self) -> bool {
        self != LimitCall::FuncSetAttributeRunning
    }

    /// Whether the call changes a kernel's attribute.
    pub fn sets_function_attribute(self) -> bool {
        matches!(self, LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning)
    }

    fn words(self) -> &'static str {
        match self {
            LimitCall::SetStackSize => "raising the per-thread stack size from 1 KiB to 8 KiB",
            LimitCall::SetPrintfFifo => "raising the printf FIFO from 1 MiB to 2 MiB (no kernel here uses printf)",
            LimitCall::GetStackSize => "reading the per-thread stack size",
            LimitCall::MemGetInfo => "reading the free and total device memory",
            LimitCall::DeviceGetAttribute => "reading the number of multiprocessors",
            LimitCall::FuncSetAttributeIdle => {
                "raising a kernel's maximum dynamic shared memory to 64 KiB; the kernel is not running"
            }
            LimitCall::FuncSetAttributeRunning => {
                "raising the maximum dynamic shared memory of the blocker's kernel to 64 KiB while it runs"
            }
        }
    }

    fn rule(self) -> (&'static str, Expected) {
        match self {
            // "If necessary, the device will block until all preceding requested tasks are complete": it may
            // drain the device, or not need to.
            LimitCall::SetStackSize => ("LM1", Expected::classes(&[Async, DeviceSync])),
            LimitCall::SetPrintfFifo => ("LM2", Expected::undocumented()),
            LimitCall::GetStackSize | LimitCall::MemGetInfo | LimitCall::DeviceGetAttribute => {
                ("LM3", Expected::undocumented())
            }
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => ("LM4", Expected::undocumented()),
        }
    }
}

/// One attribute or limit experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitFacts {
    pub call: LimitCall,
    /// The stream the blocker runs on (the calls take none).
    pub blocker_stream: StreamKind,
}

impl Experiment for LimitFacts {
    fn family(&self) -> Family {
        Family::Limits
    }

    fn id(&self) -> String {
        format!("limits/{}/{}", self.call.slug(), self.blocker_stream.slug())
    }

    fn call(&self, api: Api) -> &'static str {
        self.call.name(api)
    }

    fn runtime_twin(&self) -> bool {
        self.call.runtime_can_name_kernel()
    }

    fn rule(&self, _api: Api) -> (&'static str, Expected) {
        self.call.rule()
    }

    fn what(&self, api: Api) -> String {
        format!(
            "{} ({}), while a blocker runs on the {} stream{}",
            self.call.words(),
            self.call(api),
            self.blocker_stream.slug(),
            api_words(api)
        )
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::behind(self.blocker_stream, BlockerPlacement::Other);
        l.stream = None;
        l.blocker_stream = Some(self.blocker_stream);
        l
    }
}

impl From<LimitFacts> for Facts {
    fn from(f: LimitFacts) -> Facts {
        Facts::Limits(f)
    }
}

/// Every call next to a blocker on the legacy stream and on a non-blocking one.
pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for call in LimitCall::ALL {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            v.push(Case::driver(LimitFacts { call, blocker_stream }));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_twins_name_the_runtime_calls_and_skip_the_running_kernel() {
        for c in cases() {
            let Facts::Limits(f) = c.facts else { unreachable!("a limits case") };
            let twin = c.runtime_twin();
            assert_eq!(twin.is_some(), f.call.runtime_can_name_kernel(), "{}", c.id());
            let Some(twin) = twin else { continue };
            let want = match f.call {
                LimitCall::SetStackSize | LimitCall::SetPrintfFifo => "cudaDeviceSetLimit",
                LimitCall::GetStackSize => "cudaDeviceGetLimit",
                LimitCall::MemGetInfo => "cudaMemGetInfo",
                LimitCall::DeviceGetAttribute => "cudaDeviceGetAttribute",
                LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => "cudaFuncSetAttribute",
            };
            assert_eq!(twin.call(), want, "{}", c.id());
            assert_eq!(twin.id(), format!("runtime/{}", c.id()));
        }
    }

    #[test]
    fn every_call_next_to_both_blockers_and_only_the_stack_size_has_a_rule_to_match() {
        let cases = cases();
        assert_eq!(cases.len(), 14);
        assert!(cases.iter().all(|c| c.facts.layout().stream.is_none() && !c.facts.layout().blocker_ahead));
        for c in &cases {
            let (rule, expected) = c.rule();
            let documented = matches!(expected, Expected::Classes { .. });
            assert_eq!(documented, rule == "LM1", "{}", c.id());
        }
    }
}
