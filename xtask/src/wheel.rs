//! `cargo xtask wheel [--debug] [--out DIR]`: the Python wheel `async_lab-<version>-py3-none-manylinux_2_<N>_x86_64.whl`
//! (default in `target/wheels`): the `async_lab` package of `python/` with the `async-lab` binary, the injection
//! library, the kernels' PTX and the stand-in `libcuda.so.1` in `async_lab/bin/`, and its metadata
//! (the `async-lab` command, `python -m async_lab`, the pytest plugin, the `cupti` extra).
//!
//! The wheel is packed here rather than by maturin: it carries three prebuilt files and a stand-in driver
//! library, where maturin packs one cargo artifact and its manylinux check would refuse (or, repairing, copy
//! into the wheel) the `libcuda.so.1` the binary links, which must be the user's driver.
//!
//! The platform tag is read off the files: the newest `GLIBC_2.N` symbol version any of them needs
//! (`objdump -T`), so the tag never claims an older glibc than the binaries need.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use sha2::Digest as _;
use xshell::{cmd, Shell};

use crate::{bundle, flags, host_target_dir, project_root, user_path};

/// The distribution's name on PyPI, and its file name form.
const NAME: &str = "async-lab";
const FILE_NAME: &str = "async_lab";
/// Where the package's Python source lives.
const PYTHON_SOURCE: &str = "python/async_lab";
/// The extra that brings a CUPTI new enough for several subscribers (13.2 and later).
const CUPTI_EXTRA: &str = "nvidia-cuda-cupti>=13.2";

impl flags::Wheel {
    pub(crate) fn run(self, sh: &Shell) -> anyhow::Result<()> {
        let out = match &self.out {
            Some(dir) => user_path(dir)?,
            None => project_root().join("target/wheels"),
        };
        build(sh, self.debug, &out).map(drop)
    }
}

/// Builds the wheel from the release binaries, or from the debug ones (`debug`: what `cargo xtask test` has
/// already built; their debug info is stripped from the copies); returns its path.
pub(crate) fn build(sh: &Shell, debug: bool, out: &Path) -> anyhow::Result<PathBuf> {
    let ptx = flags::BuildPtx.run(sh)?;
    let profile = if debug { "debug" } else { "release" };
    if debug {
        cmd!(sh, "cargo build -p async-lab -p async-lab-trace-inject").run()
    } else {
        cmd!(sh, "cargo build --release -p async-lab -p async-lab-trace-inject").run()
    }
    .with_context(|| format!("building async-lab and its injection library ({profile})"))?;
    let dir = host_target_dir().join(profile);
    let staged = out.join(format!("{FILE_NAME}-staged"));
    let _ = fs::remove_dir_all(&staged);
    fs::create_dir_all(&staged).with_context(|| format!("creating {}", staged.display()))?;

    // (path in the wheel, file on disk, executable)
    let mut binaries: Vec<(String, PathBuf, bool)> = vec![
        ("async_lab/bin/async-lab".into(), dir.join("async-lab"), true),
        ("async_lab/bin/libasync_lab_inject.so".into(), dir.join("libasync_lab_inject.so"), true),
        ("async_lab/bin/no-driver/libcuda.so.1".into(), bundle::stub(profile)?, true),
    ];
    if debug {
        // The debug build's symbols and line tables are 80% of its size and nothing in the wheel reads them.
        for (name, from, _) in binaries.iter_mut() {
            let copy = staged.join(name.rsplit('/').next().unwrap_or(name));
            fs::copy(&*from, &copy).with_context(|| format!("copying {}", from.display()))?;
            cmd!(sh, "strip --strip-debug {copy}").run().context("stripping the debug copies (binutils' strip)")?;
            *from = copy;
        }
    }
    let glibc = binaries
        .iter()
        .map(|(_, path, _)| glibc_needed(sh, path))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or((2, 17));
    let tag = format!("py3-none-manylinux_{}_{}_x86_64", glibc.0, glibc.1);
    let version = env!("CARGO_PKG_VERSION");
    let wheel = out.join(format!("{FILE_NAME}-{version}-{tag}.whl"));

    let mut files: Vec<(String, Vec<u8>, bool)> = Vec::new();
    for (name, path) in python_sources()? {
        files.push((name, fs::read(&path).with_context(|| format!("reading {}", path.display()))?, false));
    }
    for (name, path, exec) in &binaries {
        files.push((name.clone(), fs::read(path).with_context(|| format!("reading {}", path.display()))?, *exec));
    }
    files.push(("async_lab/bin/async_lab_kernels.ptx".into(), fs::read(&ptx).context("reading the PTX")?, false));
    let info = format!("{FILE_NAME}-{version}.dist-info");
    files.push((format!("{info}/METADATA"), metadata(version)?.into_bytes(), false));
    files.push((format!("{info}/WHEEL"), wheel_file(&tag).into_bytes(), false));
    files.push((format!("{info}/entry_points.txt"), ENTRY_POINTS.as_bytes().to_vec(), false));
    files.push((format!("{info}/LICENSE"), license()?.into_bytes(), false));
    let record = record(&files, &format!("{info}/RECORD"));
    files.push((format!("{info}/RECORD"), record.into_bytes(), false));

    write_zip(&wheel, &files)?;
    let _ = fs::remove_dir_all(&staged);
    let size = fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "wheel: {} ({:.1} MiB, {profile} binaries, glibc {}.{} at least); install it with `pip install {}`",
        wheel.display(),
        size as f64 / (1024.0 * 1024.0),
        glibc.0,
        glibc.1,
        wheel.display()
    );
    Ok(wheel)
}

/// The package's Python files (`python/async_lab/**.py`), as (path in the wheel, file), sorted.
fn python_sources() -> anyhow::Result<Vec<(String, PathBuf)>> {
    let root = project_root().join(PYTHON_SOURCE);
    let mut found = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "__pycache__") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "py") {
                let rel = path.strip_prefix(&root).expect("under the package").to_string_lossy().into_owned();
                found.push((format!("{FILE_NAME}/{rel}"), path));
            }
        }
    }
    found.sort();
    if !found.iter().any(|(name, _)| name == "async_lab/__init__.py") {
        bail!("{PYTHON_SOURCE}/__init__.py is missing");
    }
    Ok(found)
}

/// The newest glibc symbol version `file` needs, as (2, N), from `objdump -T`.
fn glibc_needed(sh: &Shell, file: &Path) -> anyhow::Result<(u32, u32)> {
    let dump = cmd!(sh, "objdump -T {file}")
        .quiet()
        .read()
        .with_context(|| format!("reading the dynamic symbols of {} (binutils' objdump)", file.display()))?;
    Ok(newest_glibc(&dump).unwrap_or((2, 17)))
}

/// The largest `GLIBC_X.Y[.Z]` in `objdump -T` output, as (X, Y); `GLIBC_PRIVATE` and the like are not versions.
fn newest_glibc(dump: &str) -> Option<(u32, u32)> {
    dump.match_indices("GLIBC_")
        .filter_map(|(at, m)| {
            let rest = &dump[at + m.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
            let mut parts = rest[..end].split('.');
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .max()
}

/// The console script and the pytest plugin.
const ENTRY_POINTS: &str =
    "[console_scripts]\nasync-lab = async_lab.__main__:main\n\n[pytest11]\nasync_lab = async_lab.pytest_plugin\n";

/// The core metadata (version 2.1): name, version, the `cupti` extra, and docs/python.md as the description.
fn metadata(version: &str) -> anyhow::Result<String> {
    let description = fs::read_to_string(project_root().join("docs/python.md")).context("reading docs/python.md")?;
    Ok(format!(
        "Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n\
         Summary: Which CUDA call held your thread, for how long, and by what: a tracer, a gate inside the program, a pytest plugin\n\
         License: MIT OR Apache-2.0\nRequires-Python: >=3.9\nClassifier: Operating System :: POSIX :: Linux\n\
         Classifier: Framework :: Pytest\nProvides-Extra: cupti\nRequires-Dist: {CUPTI_EXTRA}; extra == \"cupti\"\n\
         Description-Content-Type: text/markdown\n\n{description}"
    ))
}

fn wheel_file(tag: &str) -> String {
    format!("Wheel-Version: 1.0\nGenerator: cargo xtask wheel\nRoot-Is-Purelib: false\nTag: {tag}\n")
}

/// The workspace's licence, as its manifest names it.
fn license() -> anyhow::Result<String> {
    let manifest = fs::read_to_string(project_root().join("Cargo.toml")).context("reading Cargo.toml")?;
    let line = manifest.lines().find(|l| l.starts_with("license")).context("Cargo.toml names no license")?;
    Ok(format!("async-lab is licensed {}.\n", line.split('"').nth(1).unwrap_or("MIT OR Apache-2.0")))
}

/// The wheel's RECORD: each file with its sha256 (urlsafe base64 without padding) and size; RECORD itself last,
/// without either (PEP 376, PEP 427).
fn record(files: &[(String, Vec<u8>, bool)], itself: &str) -> String {
    let mut out = String::new();
    for (name, bytes, _) in files {
        let digest = sha2::Sha256::digest(bytes);
        out.push_str(&format!("{name},sha256={},{}\n", data_encoding::BASE64URL_NOPAD.encode(&digest), bytes.len()));
    }
    out.push_str(&format!("{itself},,\n"));
    out
}

/// Writes the files into a zip archive at `path` (deflated; executables with mode 0755, so that pip keeps them
/// executable).
fn write_zip(path: &Path, files: &[(String, Vec<u8>, bool)]) -> anyhow::Result<()> {
    let file = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut zip = zip::ZipWriter::new(file);
    for (name, bytes, exec) in files {
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if *exec { 0o755 } else { 0o644 })
            .large_file(bytes.len() as u64 >= u32::MAX as u64);
        zip.start_file(name.as_str(), options).with_context(|| format!("adding {name}"))?;
        zip.write_all(bytes).with_context(|| format!("writing {name}"))?;
    }
    zip.finish().with_context(|| format!("finishing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_glibc_version_is_read_off_objdump() {
        let dump = "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.2.5) free\n\
                    0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) __libc_start_main\n\
                    0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.9)  pipe2\n\
                    0000000000000000      DF *UND*  0000000000000000 (GLIBC_PRIVATE) _dl_x\n";
        assert_eq!(newest_glibc(dump), Some((2, 34)));
        assert_eq!(newest_glibc("no versions here"), None);
    }

    #[test]
    fn the_record_lists_each_file_with_its_hash_and_size() {
        let files = vec![("a/x.py".to_owned(), b"hello".to_vec(), false)];
        let record = record(&files, "a-1.dist-info/RECORD");
        // sha256("hello"), urlsafe base64 without padding.
        assert_eq!(record, "a/x.py,sha256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ,5\na-1.dist-info/RECORD,,\n");
    }

    #[test]
    fn the_metadata_names_the_cupti_extra() {
        let m = metadata("9.9.9").unwrap();
        assert!(m.contains("Version: 9.9.9\n"));
        assert!(m.contains("Provides-Extra: cupti\nRequires-Dist: nvidia-cuda-cupti>=13.2; extra == \"cupti\"\n"));
        assert!(ENTRY_POINTS.contains("async-lab = async_lab.__main__:main"));
        assert!(ENTRY_POINTS.contains("[pytest11]\nasync_lab = async_lab.pytest_plugin"));
    }
}
