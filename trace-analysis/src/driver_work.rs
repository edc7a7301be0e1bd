//! When a traced call's class is `driver-work` rather than `async`: the attribution found nothing it waited
//! for (no earlier work, no other thread) and its own GPU work did not hold it, but the driver's own work on
//! the calling thread did: it created a context, loaded a module or a library, or took longer than
//! [`AT_ONCE_NS`]. The lab's experiments call such calls `async` (they time them on purpose and say how long
//! in "held for"); a user reading a trace would take `async` on a 111 ms context creation, or on a 171 µs
//! `cudaMalloc` listed among the calls held longer than 20 µs, for "returned at once".

use crate::attribution::Held;
use crate::class::{class_of_held, Class};

/// The longest a call that waited for nothing may take and still read `async` (it returned at once): 20 µs,
/// `async-lab trace`'s default `--min-held`, so that no call the tables list as held longer than that reads
/// `async`. The calls the lab saw return at once took microseconds on the H200 (warm launches 3–5 µs, pinned
/// copies 3.5–28 µs at the median: `recordings/async-lab-sweep-*`, `recordings/async-lab-seed-*`); a call
/// that took longer did work of its own in the driver (allocating, pinning, unpinning, loading, locking).
pub const AT_ONCE_NS: i64 = 20_000;

/// What the trace shows the call did in the driver, beside its attribution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverWork {
    /// Contexts created on its thread while it ran.
    pub contexts: usize,
    /// Modules loaded on its thread while it ran (lazy loading, or a load at run time).
    pub module_loads: usize,
    /// It, or a driver call inside it, is a loading function (`cuLibraryLoadData`, `cuModuleLoad`...).
    pub loads_by_name: bool,
}

/// The class of a traced call: the attribution's (`class::class_of_held`), with `async` made
/// `driver-work` where the driver's own work held the thread (see the module's doc).
pub fn class(held: &Held, work: DriverWork) -> Class {
    match class_of_held(held) {
        Class::Async if work.contexts > 0 || work.module_loads > 0 || work.loads_by_name => Class::DriverWork,
        Class::Async if held.total_ns > AT_ONCE_NS => Class::DriverWork,
        class => class,
    }
}

/// The lab's word for a trace's class: the lab's experiments call a call held by its own driver work
/// `async` (with its time in "held for"), so a traced run of them is compared with `driver-work` read as
/// `async`.
pub fn as_lab(class: Class) -> Class {
    match class {
        Class::DriverWork => Class::Async,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{attribute, Cause, Holder, Release, Scene, Span};

    fn held(len_ns: i64, holder_end: Option<i64>) -> Held {
        attribute(&Scene {
            call: Span::new(0, len_ns),
            own: None,
            own_end: None,
            holders: holder_end
                .map(|end| Holder::worded(Cause::Stream, Span::new(-10, end), "a kernel"))
                .into_iter()
                .collect(),
            release: Release::Designed,
            resolution_ns: 5_000,
            clock_error_ns: 2_000,
        })
    }

    #[test]
    fn a_call_that_waited_for_nothing_reads_driver_work_only_when_the_driver_worked() {
        let none = DriverWork::default();
        assert_eq!(class(&held(8_000, None), none), Class::Async);
        assert_eq!(class(&held(AT_ONCE_NS, None), none), Class::Async);
        assert_eq!(class(&held(AT_ONCE_NS + 1_000, None), none), Class::DriverWork);
        assert_eq!(class(&held(8_000, None), DriverWork { module_loads: 1, ..none }), Class::DriverWork);
        assert_eq!(class(&held(8_000, None), DriverWork { contexts: 1, ..none }), Class::DriverWork);
        assert_eq!(class(&held(8_000, None), DriverWork { loads_by_name: true, ..none }), Class::DriverWork);
        // A load that waited for the work ahead keeps the class of its wait.
        let waited = held(5_000_000, Some(4_000_000));
        assert_eq!(class(&waited, DriverWork { module_loads: 1, ..none }), Class::WaitedForStream);
    }
}
