//! The threads of a traced process by name: the names the system gives them (`Line::Thread`, from
//! `/proc/self/task/<tid>/comm`: `python3`, `pt_autograd_0`, XLA's `tf_XLA...`), and how the views call each
//! thread: "main thread (python3)" (the thread whose id is the process's), the name alone where no other thread
//! of the process has it ("pt_autograd_0"), else the number with the name ("thread 751 (tf_XLAEigen)").
//!
//! A trace without names (written before format 5) reads as before: "thread 695", its main thread too, except
//! where a place says which thread waited (`waiting`), which has always called it the main thread.

use super::format::Line;
use std::collections::HashMap;

/// The names of one process's threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// The process's id: its main thread's.
    pub pid: u32,
    /// Each named thread's name: the last the trace gives it (a thread renamed by the end is written again).
    names: HashMap<u64, String>,
}

impl Names {
    /// The names of a process's section (`lines`), whose id is `pid`.
    pub fn of(pid: u32, lines: &[Line]) -> Names {
        let mut n = Names { pid, names: HashMap::new() };
        for line in lines {
            if let Line::Thread { tid, name } = line {
                n.add(*tid, name);
            }
        }
        n
    }

    /// Thread `tid` is called `name` (the latest name given wins).
    pub fn add(&mut self, tid: u64, name: &str) {
        let name = name.trim();
        if !name.is_empty() {
            self.names.insert(tid, name.to_owned());
        }
    }

    /// Whether the trace names any thread (format 5).
    pub fn any(&self) -> bool {
        !self.names.is_empty()
    }

    /// Thread `tid`'s name, where the trace gives one.
    pub fn name(&self, tid: u64) -> Option<&str> {
        self.names.get(&tid).map(String::as_str)
    }

    /// Whether `tid` is the process's main thread.
    pub fn is_main(&self, tid: u64) -> bool {
        tid == u64::from(self.pid)
    }

    /// Whether no other thread of the process has `tid`'s name.
    fn unique(&self, tid: u64) -> bool {
        let Some(name) = self.name(tid) else { return false };
        self.names.iter().all(|(t, n)| *t == tid || n != name)
    }

    /// The thread in words, for sentences and headings: "main thread (python3)", "pt_autograd_0", "thread 751
    /// (tf_XLAEigen)"; in a trace without names, "thread 695" (its main thread too, as before names).
    pub fn words(&self, tid: u64) -> String {
        if !self.any() {
            return format!("thread {tid}");
        }
        self.who(tid)
    }

    /// The thread in words where a place says which thread waited: as [`Names::words`], but the main thread is
    /// "main thread" in a trace without names too.
    pub fn who(&self, tid: u64) -> String {
        match (self.is_main(tid), self.name(tid)) {
            (true, Some(name)) => format!("main thread ({name})"),
            (true, None) => "main thread".into(),
            (false, Some(name)) if self.unique(tid) => name.to_owned(),
            (false, Some(name)) => format!("thread {tid} ({name})"),
            (false, None) => format!("thread {tid}"),
        }
    }

    /// The thread in a table's cell: its number, with its name after it where the trace gives one ("695",
    /// "723 pt_autograd_0").
    pub fn cell(&self, tid: u64) -> String {
        match self.name(tid) {
            Some(name) => format!("{tid} {name}"),
            None => tid.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(tid: u64, name: &str) -> Line {
        Line::Thread { tid, name: name.into() }
    }

    #[test]
    fn threads_are_called_by_their_names_and_numbers_where_names_repeat() {
        let n = Names::of(
            683,
            &[
                thread(683, "python3"),
                thread(700, "pt_autograd_0"),
                thread(751, "tf_XLAEigen"),
                thread(752, "tf_XLAEigen"),
                thread(700, "pt_autograd_0"),
            ],
        );
        assert_eq!(n.words(683), "main thread (python3)");
        assert_eq!(n.words(700), "pt_autograd_0");
        assert_eq!(n.words(751), "thread 751 (tf_XLAEigen)");
        assert_eq!(n.words(999), "thread 999");
        assert_eq!(n.cell(700), "700 pt_autograd_0");
        assert_eq!(n.cell(999), "999");
        // A trace without names reads as before; a place still calls the main thread so.
        let old = Names::of(683, &[]);
        assert_eq!(
            (old.words(683), old.who(683), old.cell(683)),
            ("thread 683".into(), "main thread".into(), "683".into())
        );
        assert_eq!(old.who(751), "thread 751");
    }

    #[test]
    fn the_latest_name_wins_and_an_empty_one_is_none() {
        let n = Names::of(1, &[thread(5, "python3"), thread(5, "loader"), thread(6, "  ")]);
        assert_eq!(n.name(5), Some("loader"));
        assert_eq!(n.name(6), None);
    }
}
