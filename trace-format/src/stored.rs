//! A trace file as it is stored: its lines as written, or gzip-compressed where its name ends in `.gz` (the
//! committed traces, `recordings/traces/*.jsonl.gz`, and `async-lab trace --out NAME.gz`).
//!
//! Reading a compressed file takes the `gz` feature (flate2's pure-Rust backend), which the core enables; the
//! injection library, which only writes plain lines, builds without it.

use std::io::BufRead;
use std::path::Path;

/// Whether a trace at `path` is stored compressed (its name ends in `.gz`).
pub fn compressed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// Opens a trace file for reading its lines, decompressed where it is stored compressed.
pub fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    if compressed(path) {
        return decompressed(file);
    }
    Ok(Box::new(file))
}

#[cfg(feature = "gz")]
fn decompressed(file: std::io::BufReader<std::fs::File>) -> std::io::Result<Box<dyn BufRead>> {
    Ok(Box::new(std::io::BufReader::new(flate2::bufread::MultiGzDecoder::new(file))))
}

#[cfg(not(feature = "gz"))]
fn decompressed(_: std::io::BufReader<std::fs::File>) -> std::io::Result<Box<dyn BufRead>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a compressed trace (.gz) is read with async-lab-trace-format's `gz` feature",
    ))
}

#[cfg(all(test, feature = "gz"))]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    #[test]
    fn a_gz_file_reads_as_the_lines_it_stores_and_a_plain_one_as_it_is() {
        let dir = std::env::temp_dir().join(format!("async-lab-stored-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "{\"type\":\"end\",\"t\":1}\n".repeat(100);
        let gz = dir.join("t.jsonl.gz");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        std::fs::write(&gz, encoder.finish().unwrap()).unwrap();
        let plain = dir.join("t.jsonl");
        std::fs::write(&plain, &text).unwrap();
        for path in [gz, plain] {
            let mut back = String::new();
            open(&path).unwrap().read_to_string(&mut back).unwrap();
            assert_eq!(back, text, "{}", path.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
