//! A crate's module graph, read from its source, and the cycles in it (`tidy.rs` holds the check, on every
//! crate of the workspace).
//!
//! A module's dependencies are the modules its `crate::` and `super::` paths name (`use` items and paths in
//! expressions alike, `{...}` groups expanded, a `use` item read whole however many lines it spans). A path
//! points at the deepest module file it names, through re-exports: `crate::html::axis::duration` is
//! `html::axis`, and `crate::CudaError` is `error` when `lib.rs` says `pub use error::CudaError` (a `pub use`
//! of a submodule's, a `crate::`, `self::` or `super::` path, a group, an `as`, or a `*` whose module defines or
//! re-exports the name, followed until the module that defines it). Inline modules
//! (`mod tests { ... }`, as rustfmt lays them out) count as part of their file's module, and `super::`
//! inside them starts from them. Comments are skipped. A module naming its own submodule by a plain path
//! (`copies::cases()` in `experiments/mod.rs`) is not read: a parent uses its children, and a child may use its
//! parent (`super::case_record`). A library's `lib.rs` and its binary's `main.rs` are both the root, `""`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Module path (`"record"`, `"html::plots::chart"`) → the modules it uses, itself left out.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of the crate whose `src/` directory is `src`.
pub fn graph_of_dir(src: &Path) -> Graph {
    let mut files = Vec::new();
    collect(src, src, &mut files);
    graph(&files)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
                parts.pop();
            }
            out.push((parts.join("::"), fs::read_to_string(&path).unwrap()));
        }
    }
}

/// The graph of modules given as (module path, source text); the crate root is `""`.
pub fn graph(files: &[(String, String)]) -> Graph {
    let modules: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let read: Vec<(&str, Vec<Statement>)> = files.iter().map(|(m, text)| (m.as_str(), statements(m, text))).collect();
    let exports = Exports::of(&read, &modules);
    let mut g = Graph::new();
    for (module, statements) in &read {
        let deps = g.entry(module.to_string()).or_default();
        for statement in statements {
            let here: Vec<&str> = statement.here.iter().map(String::as_str).collect();
            for path in paths(&statement.text, &here) {
                if let Some(target) = exports.resolve(&path, &modules) {
                    if target != *module {
                        deps.insert(target.to_owned());
                    }
                }
            }
        }
    }
    g
}

/// One line of a module's code, comments stripped, or one whole `use` item however many lines rustfmt gave it,
/// with the module it stands in (the file's module, then the inline modules around it).
struct Statement {
    here: Vec<String>,
    text: String,
}

fn statements(module: &str, text: &str) -> Vec<Statement> {
    let base: Vec<String> = module.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let mut inline: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut open_use: Option<String> = None;
    for line in text.lines() {
        // rustfmt puts an inline module's `mod x {` and its closing `}` at the start of a line.
        if let Some(name) = inline_mod(line) {
            inline.push(name.to_owned());
            continue;
        }
        if line == "}" {
            inline.pop();
        }
        let code = strip_comment(line);
        let text = match open_use.take() {
            Some(mut item) => {
                item.push(' ');
                item.push_str(code.trim());
                item
            }
            None => code.to_owned(),
        };
        if use_item(&text).is_some() && !text.contains(';') {
            open_use = Some(text);
            continue;
        }
        out.push(Statement { here: base.iter().chain(&inline).cloned().collect(), text });
    }
    out
}

/// The use tree of a `use` item (`pub use a::{b, c};` → `a::{b, c}`) and whether it is a re-export (`pub`).
fn use_item(text: &str) -> Option<(&str, bool)> {
    let text = text.trim_start();
    let (public, rest) = match text.strip_prefix("pub") {
        Some(rest) if rest.starts_with('(') => (true, &rest[rest.find(')')? + 1..]),
        Some(rest) if rest.starts_with(' ') => (true, rest),
        _ => (false, text),
    };
    let tree = rest.trim_start().strip_prefix("use ")?;
    Some((tree.split(';').next().unwrap_or(tree).trim(), public))
}

/// What each module re-exports (`pub use`), so that a path through a re-export points at the module that
/// defines the name: `crate::CudaError` is `error` when `lib.rs` says `pub use error::CudaError`.
struct Exports {
    /// (module, name it exports) → the absolute path it stands for.
    names: BTreeMap<(String, String), Vec<String>>,
    /// module → the modules whose every name it exports (`pub use a::*`).
    globs: BTreeMap<String, Vec<Vec<String>>>,
    /// module → the names its items define (`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`).
    defined: BTreeMap<String, BTreeSet<String>>,
}

impl Exports {
    fn of(read: &[(&str, Vec<Statement>)], modules: &BTreeSet<&str>) -> Exports {
        let mut exports = Exports { names: BTreeMap::new(), globs: BTreeMap::new(), defined: BTreeMap::new() };
        for (_, statements) in read {
            for statement in statements {
                let here = statement.here.join("::");
                if let Some(name) = defined_name(&statement.text) {
                    exports.defined.entry(here.clone()).or_default().insert(name.to_owned());
                }
                let Some((item, true)) = use_item(&statement.text) else { continue };
                let Some((prefix, mut rest)) = use_root(item, &statement.here, modules) else { continue };
                let mut items = Vec::new();
                tree(&mut rest, prefix, &mut items);
                for (path, bound) in items {
                    match bound {
                        Bound::Name(name) => {
                            exports.names.insert((here.clone(), name), path);
                        }
                        Bound::Glob => exports.globs.entry(here.clone()).or_default().push(path),
                        Bound::Hidden => {}
                    }
                }
            }
        }
        exports
    }

    /// The deepest module that `path` names, following re-exports to the module that defines the name.
    fn resolve<'m>(&self, path: &[String], modules: &BTreeSet<&'m str>) -> Option<&'m str> {
        let mut path = path.to_vec();
        // A re-export of a re-export is followed; a loop of them (which rustc rejects) ends the search.
        for _ in 0..16 {
            let n = (0..=path.len()).rev().find(|&n| modules.contains(path[..n].join("::").as_str()))?;
            let module = path[..n].join("::");
            let Some(name) = path.get(n) else { break };
            let target = self.names.get(&(module.clone(), name.clone())).cloned().or_else(|| {
                self.globs.get(&module)?.iter().find(|from| self.has(&from.join("::"), name)).map(|from| {
                    let mut target = from.clone();
                    target.push(name.clone());
                    target
                })
            });
            match target {
                Some(target) if target != path[..=n] => path = [target, path[n + 1..].to_vec()].concat(),
                _ => break,
            }
        }
        deepest_module(&path, modules)
    }

    /// Whether `module` defines or re-exports `name`.
    fn has(&self, module: &str, name: &str) -> bool {
        self.defined.get(module).is_some_and(|names| names.contains(name))
            || self.names.contains_key(&(module.to_owned(), name.to_owned()))
    }
}

/// The name an item on this line defines (`pub(crate) struct Name<T>` → `Name`), if it is one.
fn defined_name(text: &str) -> Option<&str> {
    let mut words = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
    let mut word = words.next()?;
    while matches!(word, "pub" | "crate" | "super" | "unsafe" | "async" | "extern" | "C") {
        word = words.next()?;
    }
    let kinds = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union"];
    kinds.contains(&word).then(|| words.next()).flatten()
}

/// Where a `use` tree starts: `crate::`, `super::`, `self::`, or a submodule of the module it stands in (an
/// edition-2018 relative path); `None` for another crate's path.
fn use_root<'t>(tree: &'t str, here: &[String], modules: &BTreeSet<&str>) -> Option<(Vec<String>, &'t str)> {
    if let Some(rest) = tree.strip_prefix("crate::") {
        return Some((Vec::new(), rest));
    }
    let mut at = here.to_vec();
    let mut rest = tree.strip_prefix("self::").unwrap_or(tree);
    let mut up = false;
    while let Some(after) = rest.strip_prefix("super::") {
        at.pop();
        rest = after;
        up = true;
    }
    if up || rest.len() < tree.len() {
        return Some((at, rest));
    }
    let first = rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next().unwrap_or_default();
    let child = at.iter().map(String::as_str).chain([first]).collect::<Vec<_>>().join("::");
    modules.contains(child.as_str()).then_some((at, rest))
}

fn inline_mod(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("pub ").unwrap_or(line).strip_prefix("mod ")?;
    rest.strip_suffix(" {")
}

/// The line without a `//` comment (a `//` inside a string on the same line does not count).
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '"' if prev != '\\' => in_string = !in_string,
            '/' if prev == '/' && !in_string => return &line[..i - 1],
            _ => {}
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    line
}

/// The absolute paths (segments after `crate`) that the `crate::` and `super::` paths on a line name, from
/// the module `here`.
fn paths(line: &str, here: &[&str]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let start = if !boundary {
            None
        } else if line[i..].starts_with("crate::") {
            Some((Vec::new(), i + "crate::".len()))
        } else if line[i..].starts_with("super::") {
            let mut at = here.to_vec();
            let mut j = i;
            while line[j..].starts_with("super::") {
                at.pop();
                j += "super::".len();
            }
            Some((at.iter().map(|s| s.to_string()).collect(), j))
        } else {
            None
        };
        match start {
            Some((prefix, j)) => {
                let mut rest = &line[j..];
                let mut found = Vec::new();
                tree(&mut rest, prefix, &mut found);
                out.extend(found.into_iter().map(|(path, _)| path));
                i = line.len() - rest.len();
            }
            None => i += line[i..].chars().next().map_or(1, char::len_utf8),
        }
    }
    out
}

/// What a path of a use tree brings into scope.
#[derive(Debug, PartialEq)]
enum Bound {
    /// A name: the path's last segment, or its `as` name.
    Name(String),
    /// Every public name of the module it names (`*`).
    Glob,
    /// Nothing by name (`as _`: a trait's methods only).
    Hidden,
}

/// Reads a use tree (`a::b`, `a::{b, c::d as e}`, `*`) from the start of `rest`, adding each full path to
/// `out` with what it brings in.
fn tree(rest: &mut &str, mut prefix: Vec<String>, out: &mut Vec<(Vec<String>, Bound)>) {
    loop {
        *rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            *rest = group;
            loop {
                *rest = rest.trim_start();
                if let Some(after) = rest.strip_prefix('}') {
                    *rest = after;
                    return;
                }
                if rest.is_empty() {
                    return;
                }
                let before = rest.len();
                tree(rest, prefix.clone(), out);
                *rest = rest.trim_start();
                match rest.strip_prefix(',') {
                    Some(after) => *rest = after,
                    // Not a use tree after all (`crate::{` in a string or a macro): nothing more to read.
                    None if rest.len() == before => return,
                    None => {}
                }
            }
        }
        if let Some(after) = rest.strip_prefix('*') {
            *rest = after;
            out.push((prefix, Bound::Glob));
            return;
        }
        let (ident, after) = rest.split_at(ident_len(rest));
        *rest = after;
        if !ident.is_empty() && ident != "self" {
            prefix.push(ident.to_owned());
        }
        match rest.strip_prefix("::") {
            Some(after) => *rest = after,
            None => {
                let mut bound = prefix.last().map_or(Bound::Hidden, |last| Bound::Name(last.clone()));
                if let Some(after) = rest.trim_start().strip_prefix("as ") {
                    let after = after.trim_start();
                    let (name, after) = after.split_at(ident_len(after));
                    bound = if name == "_" { Bound::Hidden } else { Bound::Name(name.to_owned()) };
                    *rest = after;
                }
                out.push((prefix, bound));
                return;
            }
        }
    }
}

/// The length of the identifier `text` starts with.
fn ident_len(text: &str) -> usize {
    text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len())
}

/// The deepest module among `modules` that `path` names (the crate root `""` for none).
fn deepest_module<'m>(path: &[String], modules: &BTreeSet<&'m str>) -> Option<&'m str> {
    (0..=path.len()).rev().find_map(|n| modules.get(path[..n].join("::").as_str()).copied())
}

/// For each group of modules that reach each other through imports, one cycle (first module repeated at
/// the end) and, after it, every module of the group when there are more; empty when the graph is acyclic.
pub fn cycles(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for component in strongly_connected(g) {
        if component.len() < 2 {
            continue;
        }
        // The shortest way back from the component's first module to itself, inside the component.
        let start = component.iter().next().unwrap();
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.as_str()]);
        'search: while let Some(m) = queue.pop_front() {
            for d in g.get(m).into_iter().flatten().filter(|d| component.contains(*d)) {
                if d == start {
                    let mut back = Vec::new();
                    let mut at = m;
                    while at != start {
                        back.push(at.to_owned());
                        at = came_from[at];
                    }
                    back.reverse();
                    let cycle = [vec![start.clone()], back, vec![start.clone()]].concat();
                    let mut line = cycle.join(" → ");
                    if component.len() + 1 > cycle.len() {
                        let all: Vec<&str> = component.iter().map(String::as_str).collect();
                        line.push_str(&format!(" (all of {} reach each other)", all.join(", ")));
                    }
                    out.push(line);
                    break 'search;
                }
                if !came_from.contains_key(d.as_str()) {
                    came_from.insert(d, m);
                    queue.push_back(d);
                }
            }
        }
    }
    out
}

/// Tarjan's strongly connected components.
fn strongly_connected(g: &Graph) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        let g = s.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(m, t)| (m.to_string(), t.to_string())).collect()
    }

    #[test]
    fn paths_groups_super_and_comments() {
        let g = graph(&files(&[
            ("", "pub mod a;\npub mod b;\npub mod html;\n"),
            ("a", "use crate::b::{self, X};\n// crate::html is only mentioned\nfn f() { crate::html::axis::g(); }\n"),
            ("b", "use crate::{a::Y, html::axis::{Z, W}};\nlet s = \"// not a comment\"; crate::a::y();\n"),
            ("html", "mod axis;\n"),
            ("html::axis", "use super::super::b::Q;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
        ]));
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(g["a"], set(&["b", "html::axis"]));
        assert_eq!(g["b"], set(&["a", "html::axis"]));
        assert_eq!(g["html::axis"], set(&["b"]), "`super::*` in its tests is the module itself");
        assert_eq!(g[""], set(&[]));
    }

    /// A `{` after `crate::` that opens no use tree (in a string, a macro) ends the reading of that path: the
    /// check's own test data, a graph written in Rust strings, once kept it reading forever.
    #[test]
    fn a_use_tree_says_what_each_path_brings_in() {
        let mut rest = "a::{b, c::d as e, f::*, g::Trait as _}; rest";
        let mut out = Vec::new();
        tree(&mut rest, Vec::new(), &mut out);
        let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            out,
            [
                (path("a::b"), Bound::Name("b".into())),
                (path("a::c::d"), Bound::Name("e".into())),
                (path("a::f"), Bound::Glob),
                (path("a::g::Trait"), Bound::Hidden),
            ]
        );
        assert_eq!(rest, "; rest");
    }

    #[test]
    fn a_brace_that_opens_no_use_tree_is_read_past() {
        let found = paths(r#"let s = "use crate::{\n    a::B,\n};"; crate::c::d();"#, &[]);
        assert!(found.contains(&vec!["c".to_owned(), "d".to_owned()]), "{found:?}");
    }

    /// The imports the core had before its cycles were broken (issue 11): both cycles are named.
    #[test]
    fn the_old_cores_cycles_are_found() {
        let g = graph(&files(&[
            (
                "classify",
                "use crate::clock::ClockFit;\nuse crate::record::Rep;\nuse crate::timing::{Reading, RepTimes};\n",
            ),
            ("clock", ""),
            ("record", "use crate::clock::ClockFit;\nuse crate::rules::Expected;\n"),
            ("rules", "use crate::classify::Class;\n"),
            ("timing", "use crate::clock::ClockFit;\nuse crate::record::Rep;\n"),
            (
                "report",
                "use crate::classify::{classify_rep, Class};\n    r.explanation = crate::explain::why(s, &r);\n",
            ),
            ("explain", "use crate::report::CaseResult;\n"),
        ]));
        assert_eq!(
            cycles(&g),
            [
                "classify → record → rules → classify (all of classify, record, rules, timing reach each other)",
                "explain → report → explain"
            ]
        );
        let mut g = g;
        g.get_mut("report").unwrap().insert("compare".into());
        g.insert("compare".into(), ["report".to_owned()].into());
        assert_eq!(cycles(&g)[1], "compare → report → compare (all of compare, explain, report reach each other)");
    }

    /// The driver crate before its error type moved below the runtime (issue 31): the cycle goes through the
    /// crate root's re-export, which a path to the root alone had hidden.
    #[test]
    fn a_path_through_a_re_export_points_at_the_defining_module() {
        let g = graph(&files(&[
            ("", "pub mod error;\npub mod runtime;\npub mod stream;\npub use error::{check, DriverError};\n"),
            ("error", "fn name() { crate::runtime::error_name(1) }\n"),
            ("runtime", "pub mod library;\nuse crate::DriverError;\npub use self::library::Library as Lib;\n"),
            ("runtime::library", "pub struct Library;\n"),
            ("stream", "pub use crate::runtime::*;\nuse crate::{\n    stream::Lib,\n    check,\n};\n"),
        ]));
        assert_eq!(g["runtime"], ["error".to_owned()].into());
        assert_eq!(g["stream"], ["error".to_owned(), "runtime".to_owned(), "runtime::library".to_owned()].into());
        assert_eq!(cycles(&g), ["error → runtime → error"]);
    }

    #[test]
    fn an_acyclic_graph_has_no_cycles() {
        let g = graph(&files(&[
            ("class", ""),
            ("rules", "use crate::class::Class;\n"),
            ("classify", "pub use crate::class::Class;\nuse crate::rules::Expected;\n"),
        ]));
        assert!(cycles(&g).is_empty());
    }
}
