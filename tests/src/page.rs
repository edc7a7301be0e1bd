//! Checks of a rendered HTML page that the tests of the page share: well-formed and self-contained, and a
//! timeline and a card for every experiment.

use async_lab_core::html::element_id;
use async_lab_core::record::Recording;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

/// Where `cargo xtask test` finds the pages this test writes.
pub fn report_check_dir() -> PathBuf {
    let dir = crate::project_root().join("target/report-check");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checks that `html` is one well-formed page that loads nothing: every tag closed in order, exactly one
/// html/head/body, no script, no external style sheet, font or image, links only within the page, and no
/// stray `<` in text (text that was not escaped). Returns the element ids.
pub fn check_page(html: &str) -> Vec<String> {
    assert!(html.starts_with("<!DOCTYPE html>\n<html"), "not an HTML5 page");
    const VOID: [&str; 6] = ["meta", "br", "hr", "img", "link", "input"];
    let mut stack: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = Vec::new();
    let mut rest = &html["<!DOCTYPE html>".len()..];
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        // The end of the tag: the first `>` outside quotes.
        let mut quote = None;
        let end = rest
            .char_indices()
            .find(|&(_, c)| match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    }
                    false
                }
                None if c == '"' || c == '\'' => {
                    quote = Some(c);
                    false
                }
                None => c == '>',
            })
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("a tag never ends: <{}", &rest[..rest.len().min(80)]));
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        assert!(!name.is_empty(), "a `<` that starts no tag (unescaped text?): <{}", &tag[..tag.len().min(80)]);
        let name = name.to_ascii_lowercase();
        if let Some(closing) = tag.strip_prefix('/') {
            let closing = closing.trim().to_ascii_lowercase();
            let open = stack.pop().unwrap_or_else(|| panic!("</{closing}> closes nothing"));
            assert_eq!(open, closing, "<{open}> closed by </{closing}>");
            continue;
        }
        *counts.entry(name.clone()).or_default() += 1;
        assert!(name != "script" && name != "link" && name != "img" && name != "iframe", "<{name}> in the page");
        for attr in ["src", "href"] {
            for (i, _) in tag.match_indices(&format!(" {attr}=\"")) {
                let value = &tag[i + attr.len() + 3..];
                let value = &value[..value.find('"').unwrap()];
                assert!(value.starts_with('#'), "{attr}=\"{value}\" leaves the page");
            }
        }
        if let Some(i) = tag.find(" id=\"") {
            let value = &tag[i + 5..];
            ids.push(value[..value.find('"').unwrap()].to_owned());
        }
        if name == "style" {
            let close = rest.find("</style>").expect("<style> is closed");
            let css = &rest[..close];
            for fetch in ["url(", "@import", "@font-face", "http:", "https:"] {
                assert!(!css.contains(fetch), "the CSS fetches something: {fetch}");
            }
            rest = &rest[close + "</style>".len()..];
            continue;
        }
        if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "never closed: {stack:?}");
    for one in ["html", "head", "body", "style"] {
        assert_eq!(counts.get(one), Some(&1), "<{one}> should appear once");
    }
    let head = &html[..html.find("</head>").unwrap()];
    assert_eq!(head.matches("<title>").count(), 1, "the page has one title");
    for (i, _) in html.match_indices("http") {
        // The SVG namespace is a name, not something fetched.
        let around = &html[i.saturating_sub(7)..];
        assert!(
            around.starts_with("xmlns=\"http://www.w3.org/2000/svg\""),
            "a web address in the page: {}",
            &html[i..i + 40]
        );
    }
    let mut seen = HashSet::new();
    for id in &ids {
        assert!(seen.insert(id), "the id {id} appears twice");
    }
    ids
}

/// Every experiment of `rec` has its timeline (its own, or its step's group inside the seed's) and its card.
pub fn assert_every_experiment_has_a_timeline(ids: &[String], rec: &Recording, suffix: &str) {
    for case in &rec.cases {
        // An experiment that was not run has its card (saying why) but nothing to draw.
        let prefixes: &[&str] = if case.skipped.is_some() { &["case"] } else { &["timeline", "case"] };
        for prefix in prefixes {
            let id = element_id(prefix, &case.setup.id) + suffix;
            assert!(ids.contains(&id), "no element with id {id}");
        }
    }
}
