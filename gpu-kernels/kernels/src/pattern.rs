//! The byte pattern that `fill` writes and the per-byte term that `checksum` adds up.
//!
//! This file is shared: the kernels use it as `mod pattern`, and the host includes the very same file with
//! `#[path = "../../gpu-kernels/kernels/src/pattern.rs"] mod pattern;` to compute the expected values. It must
//! stay plain Rust that builds with and without `std`, with no imports.

#![allow(dead_code)]

/// The byte that `fill` writes at offset `i` for `seed`.
#[inline(always)]
pub fn pattern_byte(i: u64, seed: u32) -> u8 {
    let x = (i as u32) ^ ((i >> 32) as u32);
    (x.wrapping_add(seed).wrapping_mul(0x9E37_79B1) >> 24) as u8
}

/// One byte's contribution to `checksum`: position-weighted so that a shifted or partial copy gives a different sum.
#[inline(always)]
pub fn checksum_term(i: u64, byte: u8) -> u64 {
    (byte as u64 + 1) * (i % 1021 + 1)
}
