//! The rules of `attribute`, each on a scene made for it: what held a call, and what only overlapped it.

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
    let h = attribute(&scene((0, 300 * MS), Some((50 * US, 301 * MS)), vec![holder(Cause::Device, -1, 20 * MS, "k")]));
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
