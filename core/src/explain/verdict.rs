//! The end of every measured case's explanation: its class against its rule, the repetitions the readings left
//! undecided, and how many agree.

use crate::class::Class;
use crate::result::CaseResult;
use crate::rules::Verdict;

/// The class, what the rule predicts of it, and how far the repetitions agree.
pub(super) fn class_and_rule(class: Class, r: &CaseResult) -> String {
    let mut text = format!(" Class: {class}.");
    match r.verdict {
        Some(Verdict::Matches) => text.push_str(&format!(" Rule {} predicts {}: it matches.", r.rule, r.expected)),
        Some(Verdict::Deviates) => text.push_str(&format!(" Rule {} predicts {}: this deviates.", r.rule, r.expected)),
        Some(Verdict::Undocumented) => {
            text.push_str(&format!(" No current rule ({}) says what to expect {}.", r.rule, r.expected))
        }
        Some(Verdict::Inconclusive) if class != Class::Indeterminate => text.push_str(&format!(
            " Rule {} predicts {}; whether the call held the thread through its own work is below the \
             resolution, so the measurement decides nothing to hold against it.",
            r.rule, r.expected
        )),
        Some(Verdict::Inconclusive) => text.push_str(&format!(
            " Rule {} predicts {}; the measurement decides nothing to hold against it.",
            r.rule, r.expected
        )),
        None => {}
    }
    if !r.unresolved.is_empty() {
        let n = r.classes.iter().filter(|&&c| c == Class::Indeterminate).count();
        text.push_str(&format!(
            " In {n} of {} repetitions the readings decided nothing: {}.",
            r.classes.len(),
            r.unresolved.join("; ")
        ));
    }
    if r.agreement < 1.0 && !r.classes.is_empty() {
        let n = r.classes.iter().filter(|&&c| c == class).count();
        text.push_str(&format!(" ({n} of {} repetitions agree.)", r.classes.len()));
    }
    text
}
