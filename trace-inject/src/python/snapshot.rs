//! One read of a thread's (or every thread's) interpreter state, in as few system calls as the last read
//! allows. `process_vm_readv` costs about 1 µs a call and a third of a µs for each range in it, whatever its
//! size up to a page (measured here: 1.2 µs for one 64-byte range, 21 µs for 64 of them, 2.3 µs for 16 KiB
//! in one), so reading a frame, then its caller, then each code object one at a time costs tens of µs in a
//! deep stack. A [`Snapshot`] keeps what its recent reads needed (whole pages, neighbours merged: its plan),
//! copies all of it at the start of the next read in one call ([`Snapshot::begin`]), and serves the walk
//! from that copy; what the walk needs beyond it is read then ([`Snapshot::read`], [`Snapshot::fetch`]) and
//! planned for the next times ([`Snapshot::end`]). A program's held calls come back to the same few places,
//! so a read is then one system call, whichever of them it is at.
//!
//! The copy is taken at one moment for every range: another thread's frames, which change under the reader,
//! are read as they were within that call, and checked all the same by what reads them (`walk`, `code`).
//! Nothing is allocated once its buffer has grown to the largest plan.

use super::memory::{self, MAX_PARTS};

/// The granule of a plan: ranges are widened to whole pages (copying the rest of a page costs next to
/// nothing beside the page itself) and pages next to each other become one range.
const PAGE: usize = 4096;
/// The longest range a plan holds (a thread's data-stack chunk is 16 KiB; a larger one is read in parts).
const RANGE_MAX: usize = 64 * 1024;
/// The ranges one read needs at most (the ones past it are read each time, not planned).
const NEEDS: usize = 256;
/// The system calls [`Snapshot::begin`] makes at most when a range of the plan cannot be read any more.
const RETRIES: usize = 4;
/// The ranges read in place at most.
pub const DIRECT_MAX: usize = 8;
/// The pages a plan holds at most.
const PAGES: usize = 128;
/// A page stays planned for this many reads after the last one that needed it: a program held at a few places
/// in turn (each with its own stack depth and thread state) finds every place's pages copied at `begin`.
const KEEP: u8 = 16;

/// What was read at the start of this read, what this read needed, and the plan for the next.
pub struct Snapshot {
    pid: libc::pid_t,
    /// The bytes of the ranges held.
    buf: Vec<u8>,
    used: usize,
    /// The ranges held: (start, end, where in `buf`).
    held: [(usize, usize, usize); MAX_PARTS],
    n_held: usize,
    /// The ranges this read needed, as asked.
    need: [(usize, usize); NEEDS],
    n_need: usize,
    /// The pages planned, sorted, each with the reads since one needed it.
    pages: [(usize, u8); PAGES],
    n_pages: usize,
    /// The ranges to copy at the next [`Snapshot::begin`]: the pages, neighbours merged.
    plan: [(usize, usize); MAX_PARTS],
    n_plan: usize,
    /// Where [`Snapshot::end`] sorts the pages (grown once).
    scratch: Vec<(usize, u8)>,
    /// Ranges of the calling thread's own memory read in place during this read ([`Snapshot::in_place`]).
    direct: [(usize, usize); DIRECT_MAX],
    n_direct: usize,
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot {
            pid: 0,
            buf: Vec::new(),
            used: 0,
            held: [(0, 0, 0); MAX_PARTS],
            n_held: 0,
            need: [(0, 0); NEEDS],
            n_need: 0,
            pages: [(0, 0); PAGES],
            n_pages: 0,
            plan: [(0, 0); MAX_PARTS],
            n_plan: 0,
            scratch: Vec::new(),
            direct: [(0, 0); DIRECT_MAX],
            n_direct: 0,
        }
    }
}

impl Snapshot {
    /// A read begins: every range of the plan is copied, in one system call where all of them can be read.
    pub fn begin(&mut self) {
        self.pid = memory::pid();
        self.used = 0;
        self.n_held = 0;
        self.n_need = 0;
        self.n_direct = 0;
        let total: usize = self.plan[..self.n_plan].iter().map(|r| r.1 - r.0).sum();
        if self.buf.len() < total {
            self.buf.resize(total, 0);
        }
        let mut first = 0;
        let mut calls = 0;
        while first < self.n_plan && calls <= RETRIES {
            calls += 1;
            let read = self.read_parts(first, self.n_plan);
            first += read;
            // The range the kernel stopped at is no longer mapped: left out, the rest read on.
            if first < self.n_plan {
                let (s, e) = self.plan[first];
                self.used += e - s;
                first += 1;
            }
        }
    }

    /// Copies plan ranges `from..to` into the buffer after what it holds; how many of them, from the first,
    /// were read whole (each is then held).
    fn read_parts(&mut self, from: usize, to: usize) -> usize {
        let mut parts: [(usize, &mut [u8]); MAX_PARTS] = std::array::from_fn(|_| (0, &mut [][..]));
        let mut rest = &mut self.buf[self.used..];
        let n = to - from;
        for (part, &(s, e)) in parts.iter_mut().zip(&self.plan[from..to]) {
            let (here, after) = std::mem::take(&mut rest).split_at_mut(e - s);
            *part = (s, here);
            rest = after;
        }
        let read = memory::read_many(self.pid, &mut parts[..n]);
        for i in from..from + read {
            let (s, e) = self.plan[i];
            self.hold(s, e, self.used);
            self.used += e - s;
        }
        read
    }

    fn hold(&mut self, start: usize, end: usize, at: usize) {
        if self.n_held < MAX_PARTS {
            self.held[self.n_held] = (start, end, at);
            self.n_held += 1;
        }
    }

    /// The bytes at [addr, addr + len) where a held range covers them.
    fn lookup(&self, addr: usize, len: usize) -> Option<&[u8]> {
        let end = addr.checked_add(len)?;
        self.held[..self.n_held]
            .iter()
            .find(|&&(s, e, _)| addr >= s && end <= e)
            .map(|&(s, _, at)| &self.buf[at + addr - s..at + addr - s + len])
    }

    /// Whether the bytes at [addr, addr + len) were copied at the start of this read or since, or are read in
    /// place.
    pub fn holds(&self, addr: usize, len: usize) -> bool {
        self.in_place_at(addr, len) || self.lookup(addr, len).is_some()
    }

    /// From this read on, until the next [`Snapshot::begin`], [start, end) is read where it lies, without a
    /// system call, and not planned.
    ///
    /// # Safety
    /// [start, end) is mapped and readable until the next `begin`, and no other thread writes it meanwhile
    /// (the calling thread's own interpreter state while it is inside a call: `direct`).
    pub unsafe fn in_place(&mut self, start: usize, end: usize) {
        if start < end && self.n_direct < DIRECT_MAX {
            self.direct[self.n_direct] = (start, end);
            self.n_direct += 1;
        }
    }

    fn in_place_at(&self, addr: usize, len: usize) -> bool {
        let Some(end) = addr.checked_add(len) else { return false };
        self.direct[..self.n_direct].iter().any(|&(s, e)| addr >= s && end <= e)
    }

    /// Copies `out.len()` bytes at `addr` where they are read in place; false where they are not.
    fn read_in_place(&self, addr: usize, out: &mut [u8]) -> bool {
        if !self.in_place_at(addr, out.len()) {
            return false;
        }
        // SAFETY: [addr, addr + len) lies in a range given to `in_place` since this read began, whose caller
        // promised it mapped, readable and written by no other thread until the next `begin`; the bytes are
        // copied as bytes, so any value is valid.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
        true
    }

    /// Copies `out.len()` bytes at `addr`: from what is held, else by a read of their own (this thread's own
    /// stack directly, as `memory::read` does); false where they cannot be read. The range is planned.
    pub fn read(&mut self, addr: usize, out: &mut [u8]) -> bool {
        if self.read_in_place(addr, out) {
            return true;
        }
        if let Some(b) = self.lookup(addr, out.len()) {
            out.copy_from_slice(b);
            self.note(addr, out.len());
            return true;
        }
        let ok = memory::read(self.pid, addr, out);
        if ok && !memory::on_own_stack(addr, out.len()) {
            self.note(addr, out.len());
        }
        ok
    }

    /// As [`Snapshot::read`], but not planned: what is needed again only where what led to it changed (a
    /// code object, read only for a frame not read before).
    pub fn peek(&mut self, addr: usize, out: &mut [u8]) -> bool {
        if self.read_in_place(addr, out) {
            return true;
        }
        if let Some(b) = self.lookup(addr, out.len()) {
            out.copy_from_slice(b);
            return true;
        }
        memory::read(self.pid, addr, out)
    }

    /// Copies [start, end) (a window around what is about to be read: a data-stack chunk's frames) and holds
    /// it; false where it cannot be read whole. Not planned by itself: what is read from it is.
    pub fn fetch(&mut self, start: usize, end: usize) -> bool {
        if end <= start || end - start > RANGE_MAX || self.n_held == MAX_PARTS {
            return false;
        }
        if self.buf.len() < self.used + (end - start) {
            self.buf.resize(self.used + (end - start), 0);
        }
        let at = self.used;
        if !memory::read(self.pid, start, &mut self.buf[at..at + (end - start)]) {
            return false;
        }
        self.used += end - start;
        self.hold(start, end, at);
        true
    }

    /// Copies several ranges (sorted, not overlapping) in one system call and holds those read; ranges past the
    /// first that cannot be read are read one by one.
    pub fn fetch_many(&mut self, ranges: &[(usize, usize)]) {
        let ranges = &ranges[..ranges.len().min(MAX_PARTS - self.n_held)];
        let total: usize = ranges.iter().map(|r| r.1 - r.0).sum();
        if self.buf.len() < self.used + total {
            self.buf.resize(self.used + total, 0);
        }
        let mut first = 0;
        while first < ranges.len() {
            let mut parts: [(usize, &mut [u8]); MAX_PARTS] = std::array::from_fn(|_| (0, &mut [][..]));
            let mut rest = &mut self.buf[self.used..];
            for (part, &(s, e)) in parts.iter_mut().zip(&ranges[first..]) {
                let (here, after) = std::mem::take(&mut rest).split_at_mut(e - s);
                *part = (s, here);
                rest = after;
            }
            let read = memory::read_many(self.pid, &mut parts[..ranges.len() - first]);
            for &(s, e) in &ranges[first..first + read] {
                self.hold(s, e, self.used);
                self.used += e - s;
            }
            first += read + 1;
        }
    }

    /// A range this read needed, for the plan, as whole pages: joined to the last one where they meet (a walk
    /// reads frame after frame of the same pages).
    pub fn note(&mut self, addr: usize, len: usize) {
        let lo = addr & !(PAGE - 1);
        let hi = addr.saturating_add(len).saturating_add(PAGE - 1) & !(PAGE - 1);
        if let Some(last) = self.need[..self.n_need].last_mut() {
            let (s, e) = (lo.min(last.0), hi.max(last.1));
            if lo <= last.1 && hi >= last.0 && e - s <= RANGE_MAX {
                *last = (s, e);
                return;
            }
        }
        if self.n_need < NEEDS {
            self.need[self.n_need] = (lo, hi);
            self.n_need += 1;
        }
    }

    /// The read is over: the pages it needed join the plan, and the pages no read needed for [`KEEP`] reads
    /// leave it (the youngest kept where there are more than [`PAGES`]; after a read made partly in place, all
    /// those it did not need); neighbours are merged into ranges.
    pub fn end(&mut self) {
        let mut all = std::mem::take(&mut self.scratch);
        all.resize(NEEDS * 2 + PAGES, (0, 0));
        let mut n = 0;
        // The needs are whole pages already (`note`).
        for &(s, e) in &self.need[..self.n_need] {
            let mut page = s;
            while page < e && n < NEEDS * 2 && e - s <= RANGE_MAX {
                all[n] = (page, 0);
                n += 1;
                page += PAGE;
            }
        }
        // A read that read in place (the calling thread's own frames) plans only what it needed beside them:
        // what earlier reads needed is read in place now.
        let keep = if self.n_direct > 0 { 1 } else { KEEP };
        for &(page, age) in &self.pages[..self.n_pages] {
            if age + 1 < keep {
                all[n] = (page, age + 1);
                n += 1;
            }
        }
        let pages = &mut all[..n];
        // Each page once, at its youngest.
        pages.sort_unstable();
        let mut kept = 0;
        for i in 0..pages.len() {
            if kept == 0 || pages[kept - 1].0 != pages[i].0 {
                pages[kept] = pages[i];
                kept += 1;
            }
        }
        let mut pages = &mut pages[..kept];
        if pages.len() > PAGES {
            pages.sort_unstable_by_key(|p| p.1);
            pages = &mut pages[..PAGES];
            pages.sort_unstable();
        }
        self.pages[..pages.len()].copy_from_slice(pages);
        self.n_pages = pages.len();
        self.n_plan = 0;
        for &(page, _) in pages.iter() {
            match self.plan[..self.n_plan].last_mut() {
                Some(last) if last.1 == page && page + PAGE - last.0 <= RANGE_MAX => last.1 = page + PAGE,
                _ if self.n_plan < MAX_PARTS => {
                    self.plan[self.n_plan] = (page, page + PAGE);
                    self.n_plan += 1;
                }
                _ => {}
            }
        }
        self.scratch = all;
    }

    /// How many ranges the next read begins with, and their bytes.
    #[cfg(test)]
    pub fn planned(&self) -> (usize, usize) {
        (self.n_plan, self.plan[..self.n_plan].iter().map(|r| r.1 - r.0).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read that needed a few ranges of two pages plans those two pages, and the next read serves the same
    /// ranges from its copy taken at `begin` (the data changed since: the copy is the new data).
    #[test]
    fn what_a_read_needed_is_copied_at_the_start_of_the_next() {
        let mut data = vec![0u8; 6 * PAGE];
        let base = (data.as_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let at = |off: usize| base + off;
        let offset = base - data.as_ptr() as usize;
        let mut s = Snapshot::default();
        s.begin();
        let mut out = [0u8; 8];
        assert!(s.read(at(16), &mut out));
        assert!(s.read(at(PAGE + 100), &mut out));
        assert!(s.read(at(3 * PAGE + 8), &mut out));
        s.end();
        // Pages 0 and 1 merged, page 3 alone.
        assert_eq!(s.planned(), (2, 3 * PAGE));
        data[offset + PAGE + 100] = 42;
        s.begin();
        assert!(s.holds(at(PAGE + 100), 8));
        assert!(s.holds(at(3 * PAGE + 4000), 8));
        assert!(!s.holds(at(2 * PAGE), 8));
        assert!(s.read(at(PAGE + 100), &mut out));
        assert_eq!(out[0], 42);
        // A range not planned is read by itself, and planned beside the first read's for the next times.
        assert!(s.read(at(5 * PAGE), &mut out));
        s.end();
        assert_eq!(s.planned(), (3, 4 * PAGE));
    }

    /// A page is planned for the [`KEEP`] reads after the last one that needed it, and not after.
    #[test]
    fn pages_leave_the_plan_once_no_read_needed_them_for_a_while() {
        let data = vec![0u8; 4 * PAGE];
        let base = (data.as_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let mut s = Snapshot::default();
        let mut out = [0u8; 8];
        s.begin();
        assert!(s.read(base + 8, &mut out));
        assert!(s.read(base + 2 * PAGE + 8, &mut out));
        s.end();
        for read in 1..=KEEP {
            s.begin();
            assert!(s.holds(base + 2 * PAGE + 8, 8), "read {read}");
            assert!(s.read(base + 8, &mut out));
            s.end();
        }
        s.begin();
        assert!(!s.holds(base + 2 * PAGE + 8, 8));
        assert!(s.holds(base + 8, 8));
        s.end();
        assert_eq!(s.planned(), (1, PAGE));
    }

    /// A planned range that is no longer mapped is left out; the ranges after it are still copied.
    #[test]
    fn a_range_no_longer_readable_is_left_out_of_the_copy() {
        let data = vec![7u8; 4 * PAGE];
        let base = (data.as_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let mut s = Snapshot::default();
        s.plan[0] = (PAGE, 2 * PAGE);
        s.plan[1] = (base, base + PAGE);
        s.n_plan = 2;
        s.begin();
        assert!(!s.holds(PAGE, 8));
        assert!(s.holds(base + 8, 8));
        let mut out = [0u8; 8];
        assert!(!s.read(PAGE + 8, &mut out), "page 1 is never mapped");
        assert!(s.read(base + 8, &mut out));
        assert_eq!(out, [7u8; 8]);
    }

    /// A range read in place is read where it lies, not through a system call, so not planned (a read made
    /// by one would be); the read that did so plans only what it needed beside it.
    #[test]
    fn a_range_read_in_place_costs_no_system_call_and_is_not_planned() {
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * PAGE).collect();
        let base = (data.as_ptr() as usize + PAGE - 1) & !(PAGE - 1);
        let mut s = Snapshot::default();
        let mut out = [0u8; 8];
        s.begin();
        assert!(s.read(base + 8, &mut out));
        s.end();
        assert_eq!(s.planned(), (1, PAGE));
        s.begin();
        // SAFETY: `data` is alive and written by no one for the rest of the test.
        unsafe { s.in_place(base + PAGE, base + 2 * PAGE) };
        assert!(s.holds(base + PAGE + 16, 8));
        assert!(s.read(base + PAGE + 16, &mut out));
        assert_eq!(out[0], data[base - data.as_ptr() as usize + PAGE + 16]);
        s.end();
        assert_eq!(s.planned(), (0, 0), "the first read's page is no longer needed, the in-place one never planned");
        s.begin();
        assert!(!s.holds(base + PAGE + 16, 8), "in place for one read only");
    }

    #[test]
    fn windows_and_batches_are_held_for_the_rest_of_the_read() {
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * PAGE).collect();
        let base = data.as_ptr() as usize;
        let mut s = Snapshot::default();
        s.begin();
        assert!(s.fetch(base, base + 2 * PAGE));
        assert!(s.holds(base + PAGE, 64));
        s.fetch_many(&[(16, 32), (base + 2 * PAGE, base + 2 * PAGE + 64)]);
        assert!(!s.holds(16, 8));
        assert!(s.holds(base + 2 * PAGE + 8, 8));
        let mut out = [0u8; 4];
        assert!(s.read(base + 2 * PAGE + 10, &mut out));
        assert_eq!(out, [data[2 * PAGE + 10], data[2 * PAGE + 11], data[2 * PAGE + 12], data[2 * PAGE + 13]]);
    }
}
