//! Kernel records where they pay for themselves: a kernel's activity record costs the launch about a
//! microsecond (1.1–1.4 µs on the H200), so by default kernels are recorded only in windows, and the trace says
//! which (`kernel-window` lines), so that the analysis knows where a missing record means no kernel:
//! - **start-up**, from the start until the program has launched [`STARTUP_STREAK`] kernels in a row that it
//!   had launched before (`launches` counts the launches and notes when a kernel is first seen, in [`LAUNCHES`] and [`LAST_NEW_KERNEL`]): lazy loading
//!   happens at a kernel's first launch, and a first launch behind work waits for that work, which only the
//!   kernel ahead's record can end;
//! - **after a held call**: when a call holds its thread past the location threshold (`callbacks` asks, from
//!   the program's thread, by storing the call's place: its thread and function), a window opens, and stays
//!   open until that place has held [`HOLDS`] more times (the next steps of a loop are like the last, and their
//!   holds then have their kernels' records) or [`LONGEST_NS`] passed;
//! - within a budget: the launches recorded in held windows stay under [`ALLOWANCE`] plus [`SHARE`] of all
//!   launches plus [`PER_SECOND`] a second, so that a loop that holds at every step pays for a few steps'
//!   records, not every step's. A window opens only with [`ROOM`] launches of budget left (so that it can
//!   cover whole steps), and where that much is still left when it would close, it stays open (a program that
//!   launches little keeps its kernels recorded); it closes at once when it overspends by as much.
//!
//! The windows are switched on and off by this module's own thread, every [`TICK_MS`], never on the program's
//! threads (where CUPTI calls back); a CUPTI call that fails is a `note` line, and kernels stay as they were.

use crate::{activity, clock, writer};
use async_lab_trace_format::{Line, WindowWhy};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Kernels launched in a row, each launched before, that end start-up.
pub const STARTUP_STREAK: u64 = 512;
/// Holds of the place that opened a window before it closes.
pub const HOLDS: u32 = 2;
/// The longest a held window stays open.
pub const LONGEST_NS: u64 = 2_000_000_000;
/// Launches held windows may record whatever the share.
pub const ALLOWANCE: u64 = 1_000;
/// The budget a window needs left to open, and may overspend before it is closed.
pub const ROOM: i64 = 1_000;
/// The share of all launches held windows may record beyond the allowance.
pub const SHARE: f64 = 0.03;
/// And launches a second of the run: a program that launches little (a test, an experiment that holds at each
/// step) keeps its windows; 500 records a second cost a launch-bound loop well under a thousandth.
pub const PER_SECOND: u64 = 500;
/// How often the windows are looked at.
pub const TICK_MS: u64 = 1;

/// Launches seen (kernels, graphs), and how many there were when a kernel was first seen (`launches` counts
/// them as calls return): what the start-up window watches.
pub static LAUNCHES: AtomicU64 = AtomicU64::new(0);
pub static LAST_NEW_KERNEL: AtomicU64 = AtomicU64::new(0);

/// The place of the latest call held past the location threshold (thread and function, + 1; 0: none since
/// the last tick).
static HELD: AtomicU64 = AtomicU64::new(0);

/// The windows' state, on this module's thread.
#[derive(Debug)]
struct State {
    /// The window open now: when it opened and why.
    open: Option<(u64, WindowWhy)>,
    startup_over: bool,
    /// The place that opened the held window, the holds it still waits for, and the launch count then.
    site: u64,
    holds_left: u32,
    launches_at_open: u64,
    /// Launches recorded in held windows so far.
    recorded: u64,
    /// When the windows started.
    started: u64,
    /// CUPTI refused a switch: kernels stay as they are for the rest of the run.
    stopped: bool,
    /// The gate is between blocks; the window it closed, to open again.
    paused: bool,
    resume: Option<WindowWhy>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// A call of thread `tid`, function `cbid`, held its thread past the location threshold (on the program's
/// thread: one store).
#[inline]
pub fn held(tid: u64, cbid: u32) {
    HELD.store((tid << 16 ^ u64::from(cbid)).wrapping_add(1).max(1), Ordering::Relaxed);
}

/// Starts the windows where kernels are recorded in them: the start-up window is open (`activity` enabled the
/// kernel records with the rest), and this module's thread looks after it.
pub fn start() {
    if !activity::windows() {
        return;
    }
    {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if state.is_some() {
            return;
        }
        *state = Some(State {
            open: Some((clock::now(), WindowWhy::StartUp)),
            started: clock::now(),
            startup_over: false,
            site: 0,
            holds_left: 0,
            launches_at_open: 0,
            recorded: 0,
            stopped: false,
            paused: false,
            resume: None,
        });
    }
    let _ = std::thread::Builder::new().name("async-lab-kernels".into()).spawn(|| loop {
        std::thread::sleep(std::time::Duration::from_millis(TICK_MS));
        if !writer::ours() {
            return;
        }
        tick();
    });
}

/// What a tick decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Open(WindowWhy),
    Close,
}

/// Looks at the launches and the held calls since the last tick; opens or closes a window.
fn tick() {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut().filter(|s| !s.stopped && !s.paused) else { return };
    let launches = LAUNCHES.load(Ordering::Relaxed);
    let last_new = LAST_NEW_KERNEL.load(Ordering::Relaxed);
    let held = HELD.swap(0, Ordering::Relaxed);
    let now = clock::now();
    let Some(change) = decide(state, launches, last_new, held, now) else { return };
    let outcome = activity::kernels(change != Change::Close);
    match (change, outcome) {
        (Change::Open(why), Ok(())) => {
            state.open = Some((clock::now(), why));
            state.launches_at_open = launches;
        }
        (Change::Close, Ok(())) => {
            if let Some((start, why)) = state.open.take() {
                if why == WindowWhy::Held {
                    state.recorded += launches.saturating_sub(state.launches_at_open);
                }
                drop(guard);
                writer::write(&Line::KernelWindow { start, end: now, why });
            }
        }
        (_, Err(message)) => {
            // Said once; a window still open (a close refused) stays open to the end of the trace.
            state.stopped = true;
            drop(guard);
            writer::write(&Line::Note { t: now, message: format!("kernel records left as they were: {message}") });
        }
    }
}

/// What to do, from the state and what came since the last tick.
fn decide(state: &mut State, launches: u64, last_new: u64, held: u64, now: u64) -> Option<Change> {
    match state.open {
        Some((_, WindowWhy::StartUp)) => {
            if launches.saturating_sub(last_new) >= STARTUP_STREAK {
                state.startup_over = true;
                return Some(Change::Close);
            }
            None
        }
        Some((since, _)) => {
            if held != 0 && held == state.site {
                state.holds_left = state.holds_left.saturating_sub(1);
            }
            let spent = state.recorded + launches.saturating_sub(state.launches_at_open);
            let room = budget(launches, now.saturating_sub(state.started)) as i64 - spent as i64;
            let done = state.holds_left == 0 || now.saturating_sub(since) > LONGEST_NS;
            if room < -ROOM || (done && room < ROOM) {
                return Some(Change::Close);
            }
            if done {
                // Budget to spare: the window goes on, for as many holds again.
                state.holds_left = HOLDS;
            }
            None
        }
        None => {
            let room = budget(launches, now.saturating_sub(state.started)) as i64 - state.recorded as i64;
            if held == 0 || !state.startup_over || room < ROOM {
                return None;
            }
            state.site = held;
            state.holds_left = HOLDS;
            Some(Change::Open(WindowWhy::Held))
        }
    }
}

/// The launches held windows may record, out of `launches` in all, `elapsed_ns` into the run.
fn budget(launches: u64, elapsed_ns: u64) -> u64 {
    ALLOWANCE + (launches as f64 * SHARE) as u64 + PER_SECOND * elapsed_ns / 1_000_000_000
}

/// The gate between its blocks (`paused`) and at a block's beginning: a window open when the gate pauses ends
/// there (the kernels launched between blocks have no record) and opens again, for the same reason, when the
/// next block begins; no window opens or closes meanwhile.
pub fn pause(paused: bool) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut().filter(|s| !s.stopped) else { return };
    let now = clock::now();
    let mut line = None;
    if paused && !state.paused {
        if let Some((start, why)) = state.open.take() {
            if activity::kernels(false).is_ok() {
                line = Some(Line::KernelWindow { start, end: now, why });
                state.resume = Some(why);
            } else {
                state.open = Some((start, why));
            }
        }
    } else if !paused && state.paused {
        if let Some(why) = state.resume.take() {
            if activity::kernels(true).is_ok() {
                state.open = Some((clock::now(), why));
            }
        }
    }
    state.paused = paused;
    drop(guard);
    if let Some(l) = line {
        writer::write(&l);
    }
}

/// At the end: the window still open ends now (its line before the trace's end).
pub fn finish() {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(state) = guard.as_mut() else { return };
    if let Some((start, why)) = state.open.take() {
        drop(guard);
        writer::write(&Line::KernelWindow { start, end: clock::now(), why });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> State {
        State {
            open: Some((0, WindowWhy::StartUp)),
            started: 0,
            startup_over: false,
            site: 0,
            holds_left: 0,
            launches_at_open: 0,
            recorded: 0,
            stopped: false,
            paused: false,
            resume: None,
        }
    }

    /// Applies what `decide` said, as `tick` does when CUPTI agrees.
    fn step(s: &mut State, launches: u64, last_new: u64, held: u64, now: u64) -> Option<Change> {
        let change = decide(s, launches, last_new, held, now);
        match change {
            Some(Change::Open(why)) => {
                s.open = Some((now, why));
                s.launches_at_open = launches;
            }
            Some(Change::Close) => {
                if let Some((_, WindowWhy::Held)) = s.open.take() {
                    s.recorded += launches - s.launches_at_open;
                }
            }
            None => {}
        }
        change
    }

    #[test]
    fn start_up_lasts_while_new_kernels_keep_coming() {
        let mut s = fresh();
        // New kernels every few hundred launches: start-up goes on.
        assert_eq!(step(&mut s, 400, 300, 0, 1), None);
        assert_eq!(step(&mut s, 800, 700, 0, 2), None);
        // A held call during start-up opens nothing more: kernels are recorded already.
        assert_eq!(step(&mut s, 900, 700, 5, 3), None);
        // 512 launches of known kernels in a row: start-up is over.
        assert_eq!(step(&mut s, 1_300, 700, 0, 4), Some(Change::Close));
        assert!(s.startup_over);
    }

    #[test]
    fn a_held_window_covers_the_next_holds_of_its_place_and_no_more() {
        let mut s = fresh();
        step(&mut s, 1_000, 0, 0, 1);
        assert_eq!(step(&mut s, 1_100, 0, 9, 2), Some(Change::Open(WindowWhy::Held)));
        // Another place's hold does not close it; the place's own next hold is the first of two.
        assert_eq!(step(&mut s, 1_200, 0, 4, 3), None);
        assert_eq!(step(&mut s, 1_300, 0, 9, 4), None);
        assert_eq!(step(&mut s, 1_400, 0, 9, 5), Some(Change::Close));
        assert_eq!(s.recorded, 300);
    }

    #[test]
    fn held_windows_stay_within_the_budget_of_launches() {
        let mut s = fresh();
        step(&mut s, 600, 0, 0, 1);
        let mut launches = 600;
        let mut opened = 0;
        // A loop of 400 launches a step that holds at every step, for 1,000 steps.
        for k in 0..1_000u64 {
            launches += 400;
            if step(&mut s, launches, 0, 7, 10 + k) == Some(Change::Open(WindowWhy::Held)) {
                opened += 1;
            }
        }
        let spent = s.recorded + s.open.map_or(0, |_| launches - s.launches_at_open);
        assert!(spent as i64 <= budget(launches, 1_010) as i64 + ROOM, "{spent} of {launches}");
        // Some windows, far fewer than steps.
        assert!((2..60).contains(&opened), "{opened} windows");
    }

    #[test]
    fn a_program_that_launches_little_keeps_its_windows() {
        let mut s = fresh();
        step(&mut s, 600, 0, 0, 1);
        let (mut launches, mut recorded_holds) = (600, 0);
        // An experiment: a blocker and a few kernels, and one held call, every 50 ms, for a minute.
        for k in 1..=1_200u64 {
            launches += 5;
            let open_before = matches!(s.open, Some((_, WindowWhy::Held)));
            step(&mut s, launches, 0, 11, k * 50_000_000);
            recorded_holds += u64::from(open_before);
        }
        // Its holds came inside a window (their work ahead recorded), all but the first.
        assert!(recorded_holds >= 1_199, "{recorded_holds} of 1200");
    }

    #[test]
    fn a_window_whose_place_never_holds_again_closes_after_the_longest_once_its_budget_runs_short() {
        let mut s = fresh();
        step(&mut s, 600, 0, 0, 1);
        assert_eq!(step(&mut s, 600, 0, 3, 10), Some(Change::Open(WindowWhy::Held)));
        // Past the longest, with budget to spare (few launches): it stays.
        assert_eq!(step(&mut s, 700, 0, 0, 11 + LONGEST_NS), None);
        // Launches came meanwhile and used most of the budget: it closes.
        assert_eq!(step(&mut s, 2_100, 0, 0, 12 + LONGEST_NS), Some(Change::Close));
    }
}
