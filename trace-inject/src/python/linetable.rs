//! A code object's line table as ranges of bytecode, each with its source line: the formats CPython keeps
//! in `co_linetable` (3.10: pairs of deltas, PEP 626; 3.11 and later: the location table of varint entries,
//! `Objects/locations.md`). Decoded once per code object; a frame's line is then a binary search.

/// Which format a code object's `co_linetable` is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// 3.10: (bytes of code, signed line delta) pairs; a delta of -128 marks code without a line.
    Pairs,
    /// 3.11 and later: entries of a first byte (bit 7 set, a 4-bit kind, the length in code units less one)
    /// and varints.
    Locations,
}

/// Bytecode offsets [start, end) (in bytes) whose source line is `line` (-1: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub end: u32,
    pub line: i32,
}

/// The table's ranges, in order, for a code object whose first line is `first_line`.
pub fn ranges(format: Format, table: &[u8], first_line: i32) -> Vec<Range> {
    match format {
        Format::Pairs => pairs(table, first_line),
        Format::Locations => locations(table, first_line),
    }
}

/// The line of the instruction at code unit `lasti` (CPython's `PyCode_Addr2Line` of `lasti * 2`): the
/// first line where the frame has not begun (`lasti < 0`), 0 where the table has none.
pub fn line_at(ranges: &[Range], first_line: i32, lasti: i32) -> u32 {
    if lasti < 0 {
        return first_line.max(0) as u32;
    }
    let addr = (lasti as u32).saturating_mul(2);
    let i = ranges.partition_point(|r| r.end <= addr);
    match ranges.get(i) {
        Some(r) if r.start <= addr && r.line >= 0 => r.line as u32,
        _ => 0,
    }
}

/// 3.10's pairs.
fn pairs(table: &[u8], first_line: i32) -> Vec<Range> {
    let mut out = Vec::with_capacity(table.len() / 2);
    let (mut end, mut line) = (0u32, first_line);
    for pair in table.chunks_exact(2) {
        let start = end;
        end = end.saturating_add(pair[0] as u32);
        let delta = pair[1] as i8;
        let this = if delta == -128 {
            -1
        } else {
            line = line.saturating_add(delta as i32);
            line
        };
        if end > start {
            out.push(Range { start, end, line: this });
        }
    }
    out
}

/// The location table of 3.11 and later.
fn locations(table: &[u8], first_line: i32) -> Vec<Range> {
    let mut out = Vec::with_capacity(table.len() / 2);
    let (mut at, mut end, mut line) = (0usize, 0u32, first_line);
    while at < table.len() {
        let first = table[at];
        at += 1;
        if first & 0x80 == 0 {
            // Not the first byte of an entry: the table is not what it should be; keep what was read.
            break;
        }
        let kind = (first >> 3) & 15;
        let units = (first & 7) as u32 + 1;
        let this = match kind {
            15 => -1,
            13 | 14 => {
                line = line.saturating_add(signed_varint(table, &mut at));
                line
            }
            10..=12 => {
                line = line.saturating_add(kind as i32 - 10);
                line
            }
            _ => line,
        };
        // The entry's other fields (columns, the end line) are not needed: skip to the next first byte.
        while at < table.len() && table[at] & 0x80 == 0 {
            at += 1;
        }
        let start = end;
        end = end.saturating_add(units * 2);
        out.push(Range { start, end, line: this });
    }
    out
}

/// An unsigned varint of the location table: 6 bits a byte, bit 6 set where another byte follows.
fn varint(table: &[u8], at: &mut usize) -> u32 {
    let (mut value, mut shift) = (0u32, 0u32);
    while let Some(&b) = table.get(*at) {
        *at += 1;
        if shift < 32 {
            value |= ((b & 63) as u32) << shift;
        }
        shift += 6;
        if b & 64 == 0 {
            break;
        }
    }
    value
}

/// A signed varint: the sign in the lowest bit.
fn signed_varint(table: &[u8], at: &mut usize) -> i32 {
    let v = varint(table, at);
    if v & 1 == 1 {
        -((v >> 1) as i32)
    } else {
        (v >> 1) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Every instruction's line as CPython's own `co_lines()` gives it, for this function (first line 2):
    ///
    /// ```python
    /// def f(a):
    ///     try:
    ///         x = a + 1
    ///     except KeyError:
    ///         pass
    ///     for i in range(
    ///             3):
    ///         x += i
    ///     return x
    /// ```
    fn check(format: Format, table: &str, expected: &[(u32, i32)]) {
        let ranges = ranges(format, &hex(table), 2);
        for &(addr, line) in expected {
            let got = line_at(&ranges, 2, (addr / 2) as i32);
            assert_eq!(got, line.max(0) as u32, "address {addr}");
        }
        let past = expected.last().unwrap().0 + 2;
        assert_eq!(line_at(&ranges, 2, (past / 2) as i32), 0, "past the end");
        assert_eq!(line_at(&ranges, 2, -1), 2, "not begun");
    }

    #[test]
    fn python_3_10s_pairs_give_the_lines_cpython_gives() {
        let expected = [
            (0, 3),
            (2, 4),
            (4, 4),
            (12, 4),
            (14, 5),
            (24, 5),
            (26, 6),
            (28, 6),
            (30, 5),
            (32, 7),
            (34, 8),
            (36, 7),
            (42, 7),
            (44, 9),
            (52, 9),
            (54, 10),
            (56, 10),
        ];
        check(Format::Pairs, "02010c010c01040102ff0202020108ff0a020401", &expected);
    }

    #[test]
    fn the_location_table_gives_the_lines_cpython_gives() {
        // Python 3.12.1's table of the same function.
        let table = "8000f00203050dd80c0d900189458801f406000e13d80c0df303010e0ff20002050f8801e00809885189068901\
                     f00502050ff006000c0d8048f8f40b000c14f20001050dd9080cf00301050dfa";
        let expected = [
            (0, 2),
            (2, 3),
            (4, 4),
            (12, 4),
            (14, 7),
            (22, 7),
            (24, 8),
            (26, 7),
            (40, 7),
            (42, 9),
            (52, 9),
            (54, 7),
            (56, 10),
            (58, 10),
            (60, -1),
            (62, 5),
            (76, 5),
            (78, 6),
            (80, 6),
            (82, 5),
            (84, -1),
            (86, -1),
            (88, -1),
        ];
        check(Format::Locations, table, &expected);
    }

    #[test]
    fn a_table_that_is_not_one_gives_no_line_and_no_panic() {
        for table in [&[][..], &[0x7f, 0x01], &[0xff], &[0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]] {
            let r = ranges(Format::Locations, table, 1);
            let _ = line_at(&r, 1, 3);
            let r = ranges(Format::Pairs, table, 1);
            let _ = line_at(&r, 1, 3);
        }
    }
}
