//! The frames a thread was seen running in its recent reads, so that a frame met again needs no read of its
//! code object. A program is held at a few places in turn (a copy, `.item()`, the backward pass, a jit
//! dispatch), each under its own chain of library frames; keeping only the thread's last read, every change
//! of place read the code objects of the whole chain again, one range each, scattered over the heap (in a
//! framework's process most of a read's time).
//!
//! A frame is the one seen before where its address, its function and its code object are the same as then:
//! the rule the walk always used for the thread's last read (a frame holds its function and its code object,
//! so they cannot be freed while it runs), here for any frame of the recent reads. A frame popped and pushed
//! again at the same address, running the same function object over the same code object, is the same
//! function called from the same depth, with the same file, name and lines. The table holds the frames
//! in sets by address and code object, the longest unseen making room for a new one (the last read's frames
//! that find their set full of that read's own are kept beside, so that a place read again is always known):
//! a frame that lost its slot costs one read of its code object, as a frame never seen does.

use super::walk::{Known, RawFrame, MAX_FRAMES, NO_CODE};

/// The sets of slots a frame may be in (by its address and code object's), and the slots of each: 1,024
/// frames at most, a set's oldest frame making room for a new one. Eight ways: a loop's places, a hundred
/// frames or so, fit wherever they lie (with four, some layouts of the test below overflowed a set).
const SETS: usize = 128;
const WAYS: usize = 8;

/// A frame seen: where it was, what it ran, its code object's id and whether that is the program's own code,
/// the instruction it was at and whether that was found one of its code object's, and when it was last seen
/// (the read's number).
#[derive(Clone, Copy)]
struct Slot {
    frame: usize,
    func: usize,
    code: usize,
    id: u32,
    user: bool,
    lasti: i32,
    plausible: bool,
    stamp: u32,
}

impl Slot {
    const NONE: Slot =
        Slot { frame: 0, func: 0, code: 0, id: NO_CODE, user: false, lasti: -1, plausible: false, stamp: 0 };

    fn is(&self, f: &RawFrame) -> bool {
        self.id != NO_CODE && self.frame == f.frame && self.code == f.key.code && self.func == f.func
    }
}

/// One thread's recent frames, of one generation of the code table (an emptied table's ids are void).
pub struct Seen {
    sets: [[Slot; WAYS]; SETS],
    /// The last read's frames that found their set full of that read's own: every frame of the last read is
    /// known, wherever its addresses fall.
    spill: [Slot; MAX_FRAMES],
    n_spill: usize,
    generation: u64,
    reads: u32,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen { sets: [[Slot::NONE; WAYS]; SETS], spill: [Slot::NONE; MAX_FRAMES], n_spill: 0, generation: 0, reads: 0 }
    }
}

/// A frame's set: its address and its code object's, mixed.
fn set_of(frame: usize, code: usize) -> usize {
    let mixed = (frame as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (code as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    (mixed.wrapping_mul(0x1656_67b1_9e37_79f9) >> (64 - SETS.trailing_zeros())) as usize
}

impl Seen {
    /// What is known of `f` (its address, function, code object and instruction as walked) where it is a frame
    /// seen in the table's generation `generation`: its code object's key and id, whether that is the program's
    /// own, and whether its instruction was found plausible before (the same instruction, found so).
    pub fn find(&self, f: &RawFrame, generation: u64) -> Option<Known> {
        if self.generation != generation {
            return None;
        }
        let in_set = self.sets[set_of(f.frame, f.key.code)].iter().find(|s| s.is(f));
        let s = in_set.or_else(|| self.spill[..self.n_spill].iter().find(|s| s.is(f)))?;
        Some(Known { id: s.id, user: s.user, plausible: s.plausible && s.lasti == f.lasti })
    }

    /// Remembers the frames of a read (those whose code object is known), of the table's `generation`.
    pub fn remember(&mut self, frames: &[RawFrame], generation: u64) {
        if self.generation != generation {
            self.sets.iter_mut().for_each(|set| set.fill(Slot::NONE));
            self.generation = generation;
        }
        self.reads = self.reads.wrapping_add(1);
        self.n_spill = 0;
        let stamp = self.reads;
        for f in frames.iter().filter(|f| f.id != NO_CODE) {
            let (lasti, plausible) = (f.lasti, f.plausible);
            let slot = Slot {
                frame: f.frame,
                func: f.func,
                code: f.key.code,
                id: f.id,
                user: f.user,
                lasti,
                plausible,
                stamp,
            };
            let set = &mut self.sets[set_of(f.frame, f.key.code)];
            // The frame's own slot, else an empty one, else the one seen longest ago, unless this read's own
            // frames fill the set: then the spill.
            let way = set.iter().position(|s| s.is(f)).or_else(|| set.iter().position(|s| s.id == NO_CODE));
            let way = way.unwrap_or_else(|| (0..WAYS).max_by_key(|&w| stamp.wrapping_sub(set[w].stamp)).unwrap_or(0));
            if set[way].id != NO_CODE && set[way].stamp == stamp && !set[way].is(f) {
                if self.n_spill < MAX_FRAMES {
                    self.spill[self.n_spill] = slot;
                    self.n_spill += 1;
                }
            } else {
                set[way] = slot;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::walk::CodeKey;

    fn frame(frame: usize, code: usize, func: usize, id: u32) -> RawFrame {
        RawFrame { frame, func, key: CodeKey { code, first_line: 3, ..CodeKey::NONE }, id, ..RawFrame::default() }
    }

    /// Frames of several reads are known by address, function and code object; one at a known address running
    /// another code object or function is not, nor one whose code object was never known, nor anything of
    /// another generation of the code table.
    #[test]
    fn a_frame_of_a_recent_read_is_known_by_its_address_function_and_code() {
        let mut seen = Seen::default();
        let place_a = [frame(0x1000, 0xa0, 1, 1), frame(0x1050, 0xb0, 2, 2)];
        let place_b = [frame(0x1000, 0xc0, 3, 3), frame(0x1050, 0xb0, 2, 2), frame(0x10a0, 0xd0, 4, NO_CODE)];
        seen.remember(&place_a, 7);
        seen.remember(&place_b, 7);
        assert_eq!(seen.find(&frame(0x1000, 0xa0, 1, NO_CODE), 7).map(|k| k.id), Some(1), "the first read's");
        assert_eq!(seen.find(&frame(0x1000, 0xc0, 3, NO_CODE), 7).map(|k| k.id), Some(3), "the second's");
        let found = seen.find(&frame(0x1050, 0xb0, 2, NO_CODE), 7).unwrap();
        assert_eq!((found.id, found.user), (2, false));
        assert!(seen.find(&frame(0x1000, 0xa0, 9, NO_CODE), 7).is_none(), "another function");
        assert!(seen.find(&frame(0x1000, 0xe0, 1, NO_CODE), 7).is_none(), "another code object");
        assert!(seen.find(&frame(0x2000, 0xa0, 1, NO_CODE), 7).is_none(), "another address");
        assert!(seen.find(&frame(0x10a0, 0xd0, 4, NO_CODE), 7).is_none(), "never known");
        assert!(seen.find(&frame(0x1000, 0xa0, 1, NO_CODE), 8).is_none(), "another generation");
        seen.remember(&place_a[..1], 8);
        assert!(seen.find(&frame(0x1000, 0xc0, 3, NO_CODE), 8).is_none(), "emptied with the generation");
        assert!(seen.find(&frame(0x1000, 0xa0, 1, NO_CODE), 8).is_some());
    }

    /// An instruction found plausible for its frame's code object is known so while the frame is at it; at
    /// another instruction it is to be checked again.
    #[test]
    fn a_frames_instruction_found_plausible_stays_so_only_at_that_instruction() {
        let mut seen = Seen::default();
        let mut f = frame(0x1000, 0xa0, 1, 1);
        f.lasti = 12;
        f.plausible = true;
        let mut g = frame(0x1050, 0xb0, 2, 2);
        g.lasti = 4;
        seen.remember(&[f, g], 1);
        let mut again = frame(0x1000, 0xa0, 1, NO_CODE);
        again.lasti = 12;
        assert!(seen.find(&again, 1).is_some_and(|k| k.plausible));
        again.lasti = 14;
        assert!(seen.find(&again, 1).is_some_and(|k| !k.plausible && k.id == 1));
        let mut g_again = frame(0x1050, 0xb0, 2, NO_CODE);
        g_again.lasti = 4;
        assert!(seen.find(&g_again, 1).is_some_and(|k| !k.plausible), "never checked");
    }

    /// Five places of 1 to 41 frames (a stack's frames at one stride, each place's code objects at another),
    /// read in turn, are all known the next time round, wherever the stack and the code lie: 2,000 layouts.
    #[test]
    fn a_loops_places_fit_wherever_the_stack_and_the_code_lie() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as usize
        };
        for _ in 0..2000 {
            let stack = 0x7f00_0000_0000 | (next() & 0xff_ffff_fff8);
            let code = 0x5500_0000_0000 | (next() & 0xff_ffff_fff0);
            let (stride, code_stride) = (0x48 + 8 * (next() % 16), 0xa0 + 16 * (next() % 32));
            let places: Vec<Vec<RawFrame>> = [1usize, 4, 9, 21, 41]
                .iter()
                .enumerate()
                .map(|(p, &depth)| {
                    let at = |i: usize| (stack + i * stride, code + (p * 64 + i) * code_stride);
                    (0..depth).map(|i| frame(at(i).0, at(i).1, p + 1, (p * 64 + i) as u32)).collect()
                })
                .collect();
            let mut seen = Seen::default();
            for place in &places {
                seen.remember(place, 1);
            }
            for place in &places {
                assert!(place.iter().all(|f| seen.find(f, 1).is_some_and(|k| k.id == f.id)), "{stack:x} {code:x}");
            }
        }
    }

    /// A read's frames are all known at the next read, however many of them fall in one set: a chain of 64
    /// frames whose addresses all map to the same set.
    #[test]
    fn every_frame_of_the_last_read_is_known() {
        let mut seen = Seen::default();
        let target = set_of(0x7f00_0000, 0x5500_0000);
        let mut chain = Vec::new();
        let (mut frame_at, code) = (0x7f00_0000usize, 0x5500_0000usize);
        while chain.len() < MAX_FRAMES {
            if set_of(frame_at, code) == target {
                chain.push(frame(frame_at, code, 1, chain.len() as u32));
            }
            frame_at += 8;
        }
        seen.remember(&chain, 1);
        assert!(chain.iter().all(|f| seen.find(f, 1).is_some_and(|k| k.id == f.id)));
        // Read again, the same chain: still all known; and after another place's read, the spill is that one's.
        seen.remember(&chain, 1);
        assert!(chain.iter().all(|f| seen.find(f, 1).is_some()));
        seen.remember(&[frame(0x1000, 0xa0, 2, 99)], 1);
        assert_eq!(chain.iter().filter(|f| seen.find(f, 1).is_some()).count(), WAYS);
    }

    /// A training loop's places (a few chains of library frames, on the same stack addresses) fit: a hundred
    /// frames of five chains, read in turn, are all known the next time round.
    #[test]
    fn a_loops_places_are_remembered_together() {
        let mut seen = Seen::default();
        let chains: Vec<Vec<RawFrame>> = (0..5)
            .map(|c| {
                (0..20)
                    .map(|i| frame(0x7f00_1000 + 0x50 * i, 0x5500_0000 + 0x1_0000 * c + 0x200 * i, c + 1, 1))
                    .collect()
            })
            .collect();
        for chain in &chains {
            seen.remember(chain, 1);
        }
        let known = chains.iter().flatten().filter(|f| seen.find(f, 1).is_some()).count();
        assert_eq!(known, 100, "{known} of 100 frames known");
    }
}
