//! The test pattern and checksum, shared with the kernels: this module is the kernels' own
//! `pattern.rs` (one definition, compiled for both sides), plus host-side helpers around it.

#[path = "../../gpu-kernels/kernels/src/pattern.rs"]
mod shared;
pub use shared::{checksum_term, pattern_byte};

/// Fills `buf` with the pattern for `seed`, as the `fill` kernel does, with offsets starting at `start`.
pub fn fill(buf: &mut [u8], start: u64, seed: u32) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern_byte(start + i as u64, seed);
    }
}

/// The checksum the `checksum` kernel computes for `buf`.
pub fn checksum(buf: &[u8]) -> u64 {
    buf.iter().enumerate().fold(0u64, |acc, (i, b)| acc.wrapping_add(checksum_term(i as u64, *b)))
}

/// The checksum of `len` bytes of the pattern for `seed_head` over the first `head` bytes and `seed` after.
pub fn expected_checksum(len: u64, seed: u32, head: u64, seed_head: u32) -> u64 {
    (0..len).fold(0u64, |acc, i| {
        let s = if i < head { seed_head } else { seed };
        acc.wrapping_add(checksum_term(i, pattern_byte(i, s)))
    })
}
