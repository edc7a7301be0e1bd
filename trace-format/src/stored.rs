//! A trace file as it is stored: its lines as written, or gzip-compressed where its name ends in `.gz` (the
//! committed traces, `recordings/traces/*.jsonl.gz`, and `async-lab trace --out NAME.gz`).
//!
//! Reading or writing a compressed file takes the `gz` feature (flate2's pure-Rust backend), which the core
//! enables; the injection library, which only writes plain lines, builds without it.

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

/// Writes `text`, a whole trace, to `path`: compressed where its name ends in `.gz`.
pub fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if compressed(path) {
        return write_compressed(path, text);
    }
    std::fs::write(path, text)
}

#[cfg(feature = "gz")]
fn write_compressed(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    gz.write_all(text.as_bytes())?;
    gz.finish()?.flush()
}

#[cfg(not(feature = "gz"))]
fn write_compressed(_: &Path, _: &str) -> std::io::Result<()> {
    Err(unsupported())
}

#[cfg(feature = "gz")]
fn decompressed(file: std::io::BufReader<std::fs::File>) -> std::io::Result<Box<dyn BufRead>> {
    Ok(Box::new(std::io::BufReader::new(flate2::bufread::MultiGzDecoder::new(file))))
}

#[cfg(not(feature = "gz"))]
fn decompressed(_: std::io::BufReader<std::fs::File>) -> std::io::Result<Box<dyn BufRead>> {
    Err(unsupported())
}

#[cfg(not(feature = "gz"))]
fn unsupported() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a compressed trace (.gz) is read and written with async-lab-trace-format's `gz` feature",
    )
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

    #[test]
    fn a_gz_name_is_written_compressed_and_reads_back_whole() {
        let dir = std::env::temp_dir().join(format!("async-lab-stored-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "{\"type\":\"end\",\"t\":1}\n".repeat(1000);
        let gz = dir.join("t.jsonl.gz");
        write(&gz, &text).unwrap();
        let stored = std::fs::read(&gz).unwrap();
        assert!(stored.len() < text.len() / 10, "{} bytes stored for {}", stored.len(), text.len());
        let mut back = String::new();
        open(&gz).unwrap().read_to_string(&mut back).unwrap();
        assert_eq!(back, text);
        let plain = dir.join("t.jsonl");
        write(&plain, &text).unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), text);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
