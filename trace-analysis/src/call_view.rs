//! One traced call as the code that classifies it (`calls`) and the code that words it (`calls`, `text`)
//! need it: the facts the trace holds of the call (its own GPU work, its stream, the module loads and contexts
//! on its thread while it ran, the driver's overhead records, how full the launch queue was when it began),
//! each computed once, by [`Program::view`].

use super::format::OverheadKind;
use super::records::{Overhead, Work};
use super::scene::{Call, Program};
use crate::attribution::Scene;

/// What the trace holds of one call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallView<'a> {
    /// The call's index in `Program::calls`.
    pub index: usize,
    pub call: &'a Call,
    /// Its own GPU work (the records with its correlation ids), in the order it began.
    pub own_work: Vec<&'a Work>,
    /// The stream it works in or synchronizes, where it has one.
    pub stream: Option<u32>,
    /// Module loads on its thread while it ran (lazy loading, or a load at run time).
    pub module_loads: usize,
    /// Contexts created on its thread while it ran.
    pub contexts: usize,
    /// The driver's overhead records with its correlation ids, in the order they began.
    pub overheads: Vec<&'a Overhead>,
    /// How much GPU work enqueued before it had not begun when it began (`Program::queued_before`).
    pub queued_before: usize,
}

impl Program {
    /// Call `i` with the facts the trace holds of it.
    pub fn view(&self, i: usize) -> CallView<'_> {
        let own_work = self.own_work(i);
        let stream = self.stream_with(i, &own_work);
        CallView {
            index: i,
            call: &self.calls[i],
            stream,
            module_loads: self.module_loads_in(i),
            contexts: self.contexts_in(i),
            overheads: self.overheads_of(i),
            queued_before: self.queued_before_in(i, stream),
            own_work,
        }
    }

    /// [`Program::scene`] of the call `v` views, from its facts.
    pub fn scene_of(&self, v: &CallView) -> Scene {
        self.scene_with(v.index, &v.own_work, v.stream, &v.overheads)
    }
}

impl CallView<'_> {
    /// Whether a module loaded while it ran: a load on its thread, or the driver's record of a load at a
    /// first use.
    pub fn loading(&self) -> bool {
        self.module_loads > 0 || self.overheads.iter().any(|o| o.is_load())
    }

    /// Whether the driver's record says it waited for room in a full launch queue.
    pub fn queue_full(&self) -> bool {
        self.overheads.iter().any(|o| o.kind == OverheadKind::CommandBufferFull)
    }

    /// Its own function's name, then the driver functions it called.
    pub fn functions(&self) -> Vec<&str> {
        std::iter::once(self.call.name.as_str()).chain(self.call.inner.iter().map(String::as_str)).collect()
    }
}
