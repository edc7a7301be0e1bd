//! The trace file `async-lab trace --out` writes: the lines as they are, or gzip-compressed where the name ends
//! in `.gz` (a long run's trace, about a tenth of the bytes; `--replay` reads either).

use anyhow::Context as _;
use std::io::Write as _;
use std::path::Path;

/// Writes `text`, the merged trace, to `path`: compressed where its name ends in `.gz`.
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let written = if compressed(path) {
        std::fs::File::create(path).and_then(|file| {
            let mut gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::default());
            gz.write_all(text.as_bytes())?;
            gz.finish()?.flush()
        })
    } else {
        std::fs::write(path, text)
    };
    written.with_context(|| format!("writing {}", path.display()))
}

/// Whether a trace at `path` is stored compressed.
pub fn compressed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn a_gz_name_is_written_compressed_and_reads_back_whole() {
        let dir = std::env::temp_dir().join(format!("async-lab-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "{\"line\":\"header\"}\n".repeat(1000);
        let gz = dir.join("t.jsonl.gz");
        write(&gz, &text).unwrap();
        let stored = std::fs::read(&gz).unwrap();
        assert!(stored.len() < text.len() / 10, "{} bytes stored for {}", stored.len(), text.len());
        let mut back = String::new();
        flate2::read::MultiGzDecoder::new(&stored[..]).read_to_string(&mut back).unwrap();
        assert_eq!(back, text);
        let plain = dir.join("t.jsonl");
        write(&plain, &text).unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), text);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
