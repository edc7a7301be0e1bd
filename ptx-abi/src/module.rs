//! The one PTX parser: the directives and kernels (`.entry`) of a module as rustc's nvptx backend writes it,
//! and the checks of a module against the kernel list.

use crate::kernels::KERNELS;

/// One `.entry` (kernel) of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a str,
    /// Parameter types (`.u64`, `.u32`), names and pointer annotations left out.
    pub params: Vec<&'a str>,
    /// The instruction lines between `{` and the closing `}`, trimmed, blank lines left out.
    pub body: Vec<&'a str>,
}

impl Entry<'_> {
    /// `name(.u64, .u32)`.
    pub fn signature(&self) -> String {
        format!("{}({})", self.name, self.params.join(", "))
    }
}

/// A PTX module, as far as async-lab reads one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Module<'a> {
    /// The values of every `.version`, `.target` and `.address_size` line (one each in a whole module).
    pub versions: Vec<&'a str>,
    pub targets: Vec<&'a str>,
    pub address_sizes: Vec<&'a str>,
    /// Lines declaring an `.extern .func`: calls into code the module lacks.
    pub externs: Vec<&'a str>,
    pub entries: Vec<Entry<'a>>,
}

impl<'a> Module<'a> {
    pub fn parse(text: &'a str) -> Module<'a> {
        let mut module = Module::default();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let trimmed = line.trim();
            for (directive, values) in [
                (".version ", &mut module.versions),
                (".target ", &mut module.targets),
                (".address_size ", &mut module.address_sizes),
            ] {
                if let Some(value) = trimmed.strip_prefix(directive) {
                    values.push(value.trim());
                }
            }
            if trimmed.contains(".extern .func") {
                module.externs.push(trimmed);
            }
            let Some((_, rest)) = line.split_once(".entry ") else {
                continue;
            };
            let (name, after) = rest.split_once('(').unwrap_or((rest, ")"));
            let mut params = Vec::new();
            // Parameters follow on their own lines up to `)`, unless the list is empty: `.entry empty()`.
            if !after.trim_start().starts_with(')') {
                for line in lines.by_ref() {
                    let line = line.trim();
                    if let Some(param) = line.strip_prefix(".param ") {
                        params.push(param.split_whitespace().next().unwrap_or("?"));
                    }
                    if line.starts_with(')') || line.ends_with(')') {
                        break;
                    }
                }
            }
            let body = lines
                .by_ref()
                .skip_while(|line| line.trim() != "{")
                .skip(1)
                .take_while(|line| *line != "}")
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect();
            module.entries.push(Entry { name: name.trim(), params, body });
        }
        module
    }

    /// The kernel of this name.
    pub fn entry(&self, name: &str) -> Option<&Entry<'a>> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// What keeps the host from launching this module's kernels: each kernel of the list that is missing or
    /// takes other parameters. Empty when every kernel is there as listed.
    pub fn abi_problems(&self) -> Vec<String> {
        KERNELS
            .iter()
            .filter_map(|k| match self.entry(k.name) {
                None => Some(format!("{} is missing", k.name)),
                Some(e) if e.params != k.params => {
                    Some(format!("{} is {}, the host passes {}", k.name, e.signature(), k.signature()))
                }
                Some(_) => None,
            })
            .collect()
    }

    /// The kernels of the module that the list does not name.
    pub fn unknown_entries(&self) -> Vec<&'a str> {
        self.entries.iter().map(|e| e.name).filter(|name| !KERNELS.iter().any(|k| k.name == *name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.0
.target sm_70
.address_size 64

.visible .entry fill(
\t.param .u64 .ptr .align 1 fill_param_0,
\t.param .u64 fill_param_1,
\t.param .u32 fill_param_2
)
{
\tld.param.u64 %rd1, [fill_param_0];

\tret;
}
.visible .entry empty()
{
\tret;
}
";

    #[test]
    fn reads_directives_entries_parameters_and_bodies() {
        let m = Module::parse(PTX);
        assert_eq!((&m.versions, &m.targets, &m.address_sizes), (&vec!["7.0"], &vec!["sm_70"], &vec!["64"]));
        let sigs: Vec<String> = m.entries.iter().map(Entry::signature).collect();
        assert_eq!(sigs, ["fill(.u64, .u64, .u32)", "empty()"]);
        assert_eq!(m.entry("fill").unwrap().body, ["ld.param.u64 %rd1, [fill_param_0];", "ret;"]);
        assert_eq!(m.entry("empty").unwrap().body, ["ret;"]);
        assert!(m.externs.is_empty());
    }

    #[test]
    fn names_missing_kernels_and_other_signatures() {
        let m = Module::parse(PTX);
        let problems = m.abi_problems();
        assert!(problems.iter().any(|p| p == "spin_sleep is missing"), "{problems:?}");
        assert!(!problems.iter().any(|p| p.starts_with("fill") || p.starts_with("empty")), "{problems:?}");
        let wrong = Module::parse(".visible .entry fill(\n.param .u64 a\n)\n{\n}\n");
        assert!(wrong.abi_problems().contains(&"fill is fill(.u64), the host passes fill(.u64, .u64, .u32)".into()));
        assert_eq!(Module::parse(".visible .entry extra()\n{\n}\n").unknown_entries(), ["extra"]);
    }
}
