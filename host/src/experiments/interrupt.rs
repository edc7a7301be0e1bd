//! Stopping a run on Ctrl-C: the first finishes the measurement under way and lets the run write what was
//! measured, marked partial; the second quits at once. The runner and the families that measure several
//! parts in one experiment (the pairs of GPUs of a peer experiment) read `STOP` between measurements.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the Ctrl-C handler: finish the current measurement, then stop.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Installs the Ctrl-C handler (once per process).
pub fn install_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("\nasync-lab: stopping now (second Ctrl-C); nothing more is written");
            std::process::exit(130);
        }
        eprintln!("\nasync-lab: Ctrl-C: finishing the current measurement, then writing what was measured (Ctrl-C again to quit at once)");
    });
}
