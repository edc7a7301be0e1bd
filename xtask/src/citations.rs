//! The file names a text cites, for the check that every recording is cited by a doc or a test (`tidy.rs`).
//!
//! A text cites a file by its whole name or by a pattern of names: `*` stands for any text, and so does a
//! placeholder in angle brackets (`steps-<program>-*.txt`) or in braces without a comma (a Rust format argument,
//! `trace-crash-{mode}-`); braces with commas are alternatives (`-run{1,2,3}.json`). Folders do not count: a
//! name is read from its last `/` on.

/// The names and patterns `text` spells, each alternative of a pattern on its own, every placeholder read as `*`.
pub fn patterns(text: &str) -> Vec<String> {
    words(text).iter().flat_map(|word| alternatives(word)).map(|p| placeholders_to_any(&p)).collect()
}

/// Whether `pattern` (`*` standing for any text) matches the whole of `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else { return pattern == name };
    let Some(mut left) = name.strip_prefix(first) else { return false };
    let mut parts: Vec<&str> = rest.split('*').collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// Whether a pattern has a part that stands for any text.
pub fn has_wildcard(pattern: &str) -> bool {
    pattern.contains('*')
}

/// The runs of characters that can make up a name or a pattern (a comma only inside braces), without the
/// full stop or comma of the sentence around them.
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut braces = 0usize;
    for c in text.chars() {
        let in_name = c.is_ascii_alphanumeric() || "._+-*<>{}".contains(c) || (c == ',' && braces > 0);
        if in_name {
            match c {
                '{' => braces += 1,
                '}' => braces = braces.saturating_sub(1),
                _ => {}
            }
            word.push(c);
        } else {
            words.push(std::mem::take(&mut word));
            braces = 0;
        }
    }
    words.push(word);
    words.into_iter().map(|w| w.trim_end_matches(['.', ',']).to_owned()).filter(|w| !w.is_empty()).collect()
}

/// A word with each `{a,b}` expanded into its alternatives, and each `{x}` into `*`.
fn alternatives(word: &str) -> Vec<String> {
    let Some(open) = word.find('{') else { return vec![word.to_owned()] };
    let Some(close) = word[open..].find('}').map(|at| open + at) else { return vec![word.to_owned()] };
    let inner = &word[open + 1..close];
    let choices: Vec<&str> = if inner.contains(',') { inner.split(',').collect() } else { vec!["*"] };
    choices
        .into_iter()
        .flat_map(|choice| alternatives(&format!("{}{choice}{}", &word[..open], &word[close + 1..])))
        .collect()
}

/// A word with each `<placeholder>` read as `*`.
fn placeholders_to_any(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>').map(|at| open + at) else { break };
        out.push_str(&rest[..open]);
        out.push('*');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns_are_read_from_prose_and_code() {
        let text = "see `recordings/traces/trace-a-h200-x1.jsonl.gz`, `steps-<program>-x1.txt` and \
                    the runs `r-x1-run{1,2}.json`.\n    let path = format!(\"trace-crash-{mode}-\");";
        let found = patterns(text);
        for expected in
            ["trace-a-h200-x1.jsonl.gz", "steps-*-x1.txt", "r-x1-run1.json", "r-x1-run2.json", "trace-crash-*-"]
        {
            assert!(found.iter().any(|p| p == expected), "{expected} not in {found:?}");
        }
        assert!(!found.iter().any(|p| p.ends_with('.') || p.contains(',')), "{found:?}");
    }

    #[test]
    fn a_pattern_matches_whole_names_only() {
        assert!(matches("trace-*-x1.jsonl.gz", "trace-a-b-x1.jsonl.gz"));
        assert!(matches("steps-*-x1.txt", "steps-torch-untraced-x1.txt"));
        assert!(matches("a*a", "aa"));
        assert!(!matches("a*a", "a"));
        assert!(!matches("trace-*-x1.jsonl", "trace-a-x1.jsonl.gz"));
        assert!(!matches("trace-crash-*-", "trace-crash-segv-x1.jsonl.gz"));
        assert!(matches("exact.md", "exact.md") && !matches("exact.md", "exact.md.gz"));
        assert!(has_wildcard("a*") && !has_wildcard("a"));
    }
}
