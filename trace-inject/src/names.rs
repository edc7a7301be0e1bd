//! The threads' names as the system gives them (`/proc/self/task/<tid>/comm`: `python3`, `pt_autograd_0`,
//! `pool-3-thread-1`), for the trace's `Line::Thread`: read on the library's thread, never on the program's,
//! when the writer first meets a thread (its ring, or a Python thread a location names among the others), and
//! once more at the end for the names that changed since (a thread that exited before is left as it was
//! named). The name is the system's (15 bytes at most); Python's own thread names (`threading.Thread.name`)
//! live in Python objects that only the GIL keeps still, and are not read (3.14 gives the system a thread's
//! Python name itself).

use async_lab_trace_format::Line;
use std::collections::HashMap;

/// The names given so far, by thread.
#[derive(Debug, Default)]
pub struct Names {
    known: HashMap<u64, String>,
}

impl Names {
    /// The line naming thread `tid` the first time it is met; `None` where it was named already, where it is
    /// gone, or for id 0 (not known).
    pub fn first(&mut self, tid: u64) -> Option<Line> {
        if tid == 0 || self.known.contains_key(&tid) {
            return None;
        }
        let name = comm(tid)?;
        self.known.insert(tid, name.clone());
        Some(Line::Thread { tid, name })
    }

    /// Lines for the threads named before whose name has changed since, in the order of their ids; a thread
    /// that exited keeps the name it had.
    pub fn renamed(&mut self) -> Vec<Line> {
        let mut changed: Vec<Line> = Vec::new();
        for (&tid, name) in &mut self.known {
            if let Some(now) = comm(tid).filter(|now| now != name) {
                name.clone_from(&now);
                changed.push(Line::Thread { tid, name: now });
            }
        }
        changed.sort_by_key(|l| if let Line::Thread { tid, .. } = l { *tid } else { 0 });
        changed
    }
}

/// Thread `tid`'s name, where it is a thread of this process still running.
fn comm(tid: u64) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
    Some(text.strip_suffix('\n').unwrap_or(&text).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gettid() -> u64 {
        // SAFETY: gettid has no preconditions.
        (unsafe { libc::gettid() }) as u64
    }

    /// A thread is named once, by the name the system gives it, and again at the end where its name changed;
    /// a thread gone keeps its first line, and no id that is not a thread of the process is named.
    #[test]
    fn a_thread_is_named_once_and_again_where_its_name_changed() {
        let (named_tx, named_rx) = std::sync::mpsc::channel();
        let (rename_tx, rename_rx) = std::sync::mpsc::channel::<()>();
        let (renamed_tx, renamed_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("async-lab-name".into())
            .spawn(move || {
                named_tx.send(gettid()).unwrap();
                rename_rx.recv().unwrap();
                // SAFETY: a NUL-terminated name of 15 bytes or fewer, for this very thread.
                unsafe { libc::pthread_setname_np(libc::pthread_self(), c"pt_autograd_0".as_ptr()) };
                renamed_tx.send(()).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = named_rx.recv().unwrap();
        let mut names = Names::default();
        assert_eq!(names.first(tid), Some(Line::Thread { tid, name: "async-lab-name".into() }));
        assert_eq!(names.first(tid), None, "named once");
        assert_eq!(names.renamed(), vec![]);
        rename_tx.send(()).unwrap();
        renamed_rx.recv().unwrap();
        assert_eq!(names.renamed(), vec![Line::Thread { tid, name: "pt_autograd_0".into() }]);
        assert_eq!(names.renamed(), vec![], "the change is said once");
        done_tx.send(()).unwrap();
        worker.join().unwrap();
        // Gone: nothing more is said of it, and an id of no thread of the process is not named.
        assert_eq!(names.renamed(), vec![]);
        assert_eq!(names.first(0), None);
        assert_eq!(names.first(u64::from(u32::MAX)), None);
    }
}
