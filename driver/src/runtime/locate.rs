//! Where a CUDA library the binary loads at run time is looked for ([`CUDART`], the runtime; [`CUPTI`], for
//! `async-lab trace`), in order: its option (`--cudart PATH`), its variable (`$ASYNC_LAB_CUDART`),
//! `$LD_LIBRARY_PATH`, `$CUDA_HOME`/`$CUDA_PATH`, the toolkit's usual folders, the system's library folders,
//! and the Python wheels that ship it (`nvidia/cu13/lib`, `nvidia/cuda_runtime/lib`, as PyTorch and JAX
//! install them).
//!
//! The first folder that holds one wins; in a folder, the highest major version wins. Nothing here loads a
//! library: this only names files, so it is tested on folders of empty files.

use std::path::{Path, PathBuf};

/// One library to look for, and where besides the common places.
pub struct Lib {
    /// The file name before its version: `libcudart.so`.
    pub stem: &'static str,
    /// The command-line option that names it.
    pub option: &'static str,
    /// The environment variable that names it (a file, or a folder holding one).
    pub var: &'static str,
    /// Folders under a toolkit's root (`$CUDA_HOME`, `/usr/local/cuda*`).
    pub toolkit_dirs: &'static [&'static str],
    /// Folders under Python's site-packages.
    pub wheel_dirs: &'static [&'static str],
}

/// The CUDA runtime.
pub const CUDART: Lib = Lib {
    stem: "libcudart.so",
    option: "--cudart",
    var: "ASYNC_LAB_CUDART",
    toolkit_dirs: &["lib64", "lib", "targets/x86_64-linux/lib"],
    wheel_dirs: &["nvidia/cu13/lib", "nvidia/cuda_runtime/lib", "nvidia/cu12/lib"],
};

/// CUPTI, for `async-lab trace` (older toolkits keep it in `extras/CUPTI`).
pub const CUPTI: Lib = Lib {
    stem: "libcupti.so",
    option: "--cupti",
    var: "ASYNC_LAB_CUPTI",
    toolkit_dirs: &["lib64", "extras/CUPTI/lib64", "lib", "targets/x86_64-linux/lib"],
    wheel_dirs: &["nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/cu12/lib"],
};

/// The environment variable that names the runtime library (a file, or a folder holding one).
pub const ENV_VAR: &str = CUDART.var;

/// A library file and how it was found (for `info` and recordings; says where without a home folder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    /// "--cudart", "ASYNC_LAB_CUDART", "LD_LIBRARY_PATH", "CUDA toolkit", "system library", "Python wheel".
    pub source: &'static str,
}

/// What the search needs from the outside world, so tests can give it a made-up one.
pub struct Env {
    pub explicit: Option<PathBuf>,
    pub var: Option<String>,
    pub ld_library_path: Option<String>,
    pub cuda_homes: Vec<String>,
    /// Where `cuda/` and `cuda-X.Y/` toolkits are installed (`/usr/local`).
    pub toolkit_root: Option<PathBuf>,
    /// Folders to try after the toolkit's (system folders).
    pub system_dirs: Vec<PathBuf>,
    /// Python's site-packages folders; asked for only when nothing else has a runtime (it starts Python).
    pub site_packages: Box<dyn Fn() -> Vec<PathBuf>>,
}

impl Env {
    /// This process's environment, for the runtime.
    pub fn current(explicit: Option<&Path>) -> Env {
        Env::current_for(&CUDART, explicit)
    }

    /// This process's environment, for `lib`.
    pub fn current_for(lib: &Lib, explicit: Option<&Path>) -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            explicit: explicit.map(Path::to_path_buf),
            var: var(lib.var),
            ld_library_path: var("LD_LIBRARY_PATH"),
            cuda_homes: ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"].iter().filter_map(|k| var(k)).collect(),
            toolkit_root: Some(PathBuf::from("/usr/local")),
            system_dirs: ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
                .iter()
                .map(PathBuf::from)
                .collect(),
            site_packages: Box::new(python_site_packages),
        }
    }
}

/// Why no library was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotFound {
    /// `--cudart` or the variable named something that is not a runtime library: "--cudart: ... does not exist".
    Explicit(String),
    /// The search found none; every folder looked in.
    Searched(Vec<String>),
}

/// The outcome of a search for the runtime: the library, or why there is none.
pub fn find(env: &Env) -> Result<Found, NotFound> {
    find_lib(&CUDART, env)
}

/// The outcome of a search for `lib`: the library, or why there is none.
pub fn find_lib(lib: &Lib, env: &Env) -> Result<Found, NotFound> {
    let mut looked = Vec::new();
    // An explicit choice is final: a wrong path is reported, never silently replaced by another library.
    for (given, source) in [(env.explicit.clone(), lib.option), (env.var.as_ref().map(PathBuf::from), lib.var)] {
        if let Some(p) = given {
            return explicit(lib, &p)
                .map(|path| Found { path, source })
                .map_err(|why| NotFound::Explicit(format!("{source}: {why}")));
        }
    }
    let mut dirs: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(ld) = &env.ld_library_path {
        dirs.extend(ld.split(':').filter(|d| !d.is_empty()).map(|d| (PathBuf::from(d), "LD_LIBRARY_PATH")));
    }
    for home in &env.cuda_homes {
        for sub in lib.toolkit_dirs {
            dirs.push((Path::new(home).join(sub), "CUDA toolkit"));
        }
    }
    if let Some(root) = &env.toolkit_root {
        let roots = std::iter::once(root.join("cuda")).chain(versioned_toolkits(root));
        // The runtime is looked for in cuda/lib64 and cuda-*/lib64 only, as it always was.
        let subs: &[&str] = if lib.stem == CUDART.stem { &["lib64"] } else { lib.toolkit_dirs };
        for toolkit in roots {
            dirs.extend(subs.iter().map(|sub| (toolkit.join(sub), "CUDA toolkit")));
        }
    }
    dirs.extend(env.system_dirs.iter().map(|d| (d.clone(), "system library")));
    for (dir, source) in dirs {
        if let Some(path) = best_lib_in(lib, &dir) {
            return Ok(Found { path, source });
        }
        looked.push(dir.display().to_string());
    }
    for site in (env.site_packages)() {
        for sub in lib.wheel_dirs {
            let dir = site.join(sub);
            if let Some(path) = best_lib_in(lib, &dir) {
                return Ok(Found { path, source: "Python wheel" });
            }
            looked.push(dir.display().to_string());
        }
    }
    Err(NotFound::Searched(looked))
}

/// A path given by the user: a library file, or a folder holding one.
fn explicit(lib: &Lib, p: &Path) -> Result<PathBuf, String> {
    if p.is_dir() {
        best_lib_in(lib, p).ok_or_else(|| format!("{} holds no {}*", p.display(), lib.stem))
    } else if p.is_file() {
        Ok(p.to_path_buf())
    } else {
        Err(format!("{} does not exist", p.display()))
    }
}

/// The runtime library in `dir` with the highest version in its name (`libcudart.so.13.0.96` before
/// `libcudart.so.12` before `libcudart.so`).
pub fn best_in(dir: &Path) -> Option<PathBuf> {
    best_lib_in(&CUDART, dir)
}

/// `lib` in `dir`, the highest version in its name first.
pub fn best_lib_in(lib: &Lib, dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix(lib.stem)?;
            let numbers: Option<Vec<u32>> =
                version.split('.').filter(|s| !s.is_empty()).map(|s| s.parse().ok()).collect();
            Some((numbers?, e.path()))
        })
        .filter(|(_, p)| p.is_file())
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, p)| p)
}

/// `/usr/local/cuda-*/lib64`, newest version first.
fn versioned_toolkits(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return vec![] };
    let mut v: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version: Vec<u32> = name.strip_prefix("cuda-")?.split('.').filter_map(|s| s.parse().ok()).collect();
            Some((version, e.path().join("lib64")))
        })
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0));
    v.into_iter().map(|(_, p)| p).collect()
}

/// The site-packages folders of the `python3` on PATH (and its user folder), or none without Python.
fn python_site_packages() -> Vec<PathBuf> {
    site_packages_of("python3")
}

/// The site-packages folders of the Python interpreter `python` (and its user folder, and what its
/// `PYTHONPATH` adds), or none where it does not run.
pub fn site_packages_of(python: &str) -> Vec<PathBuf> {
    let script = "import site,sys,sysconfig\nfor p in [sysconfig.get_paths()['purelib']]+site.getsitepackages()+[site.getusersitepackages()]+sys.path[1:]: print(p)";
    let Ok(out) = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return vec![];
    };
    String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(explicit: Option<PathBuf>, var: Option<String>, ld: Option<String>, sites: Vec<PathBuf>) -> Env {
        Env {
            explicit,
            var,
            ld_library_path: ld,
            cuda_homes: vec![],
            toolkit_root: None,
            system_dirs: vec![],
            site_packages: Box::new(move || sites.clone()),
        }
    }

    fn touch(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, b"").unwrap();
        p
    }

    #[test]
    fn highest_version_in_a_folder_wins() {
        let d = tempdir("best");
        touch(&d, "libcudart.so");
        touch(&d, "libcudart.so.12");
        let best = touch(&d, "libcudart.so.13.0.96");
        touch(&d, "libcudart_static.a");
        touch(&d, "libcudart.so.13.tmp");
        assert_eq!(best_in(&d), Some(best));
        assert_eq!(best_in(&d.join("missing")), None);
    }

    #[test]
    fn an_explicit_choice_is_final() {
        let d = tempdir("explicit");
        let lib = touch(&d.join("a"), "libcudart.so.12");
        touch(&d.join("ld"), "libcudart.so.13");
        let ld = Some(d.join("ld").display().to_string());
        let found = find(&env(Some(lib.clone()), None, ld.clone(), vec![])).unwrap();
        assert_eq!((found.path, found.source), (lib.clone(), "--cudart"));
        let found = find(&env(None, Some(d.join("a").display().to_string()), ld.clone(), vec![])).unwrap();
        assert_eq!((found.path, found.source), (lib, ENV_VAR));
        let err = find(&env(Some(d.join("nope")), None, ld, vec![])).unwrap_err();
        assert!(matches!(&err, NotFound::Explicit(why) if why.contains("does not exist")), "{err:?}");
    }

    #[test]
    fn search_order_then_python_wheels() {
        let d = tempdir("order");
        let wheel = touch(&d.join("site/nvidia/cu13/lib"), "libcudart.so.13");
        let sites = vec![d.join("site")];
        let empty_ld = Some(d.join("empty").display().to_string());
        let found = find(&env(None, None, empty_ld.clone(), sites.clone())).unwrap();
        assert_eq!((found.path, found.source), (wheel, "Python wheel"));
        let ld_lib = touch(&d.join("ld"), "libcudart.so.12");
        let found =
            find(&env(None, None, Some(format!("{}:{}", d.join("empty").display(), d.join("ld").display())), sites))
                .unwrap();
        assert_eq!((found.path, found.source), (ld_lib, "LD_LIBRARY_PATH"));
    }

    #[test]
    fn cupti_is_found_in_the_toolkit_extras_and_its_own_wheel() {
        let d = tempdir("cupti");
        touch(&d.join("home/lib64"), "libcudart.so.13");
        let extras = touch(&d.join("home/extras/CUPTI/lib64"), "libcupti.so.13");
        let mut e = env(None, None, None, vec![]);
        e.cuda_homes = vec![d.join("home").display().to_string()];
        let found = find_lib(&CUPTI, &e).unwrap();
        assert_eq!((found.path, found.source), (extras, "CUDA toolkit"));
        let wheel = touch(&d.join("site/nvidia/cuda_cupti/lib"), "libcupti.so.13");
        let found = find_lib(&CUPTI, &env(None, None, None, vec![d.join("site")])).unwrap();
        assert_eq!((found.path, found.source), (wheel, "Python wheel"));
        let err = find_lib(&CUPTI, &env(Some(d.join("home/lib64")), None, None, vec![])).unwrap_err();
        assert!(matches!(&err, NotFound::Explicit(why) if why.contains("--cupti") && why.contains("libcupti.so")));
    }

    #[test]
    fn nothing_found_lists_where_it_looked() {
        let d = tempdir("none");
        let NotFound::Searched(looked) =
            find(&env(None, None, Some(d.display().to_string()), vec![d.join("site")])).unwrap_err()
        else {
            panic!("nothing explicit was given")
        };
        assert!(looked.iter().any(|l| l == &d.display().to_string()), "{looked:?}");
        assert!(looked.iter().any(|l| l.ends_with("nvidia/cu13/lib")), "{looked:?}");
    }

    fn tempdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("async-lab-locate-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
