//! Baselines of the conformance runners: the ids of the cases that pass, one per line, in
//! `testdata/conformance/NAME.baseline`. A runner fails only on a case that passed in the
//! baseline and no longer does; `GRAIL_UPDATE_BASELINE=1` rewrites the baseline instead.
//! Shared by the runners of several crates (included with `#[path]`).

use std::collections::BTreeSet;
use std::path::Path;

/// Compares the passing case ids with the baseline file (or rewrites it when
/// `GRAIL_UPDATE_BASELINE` is set), panicking on regressions.
pub fn check_against_baseline(baseline_path: &Path, passing: &BTreeSet<String>) {
    if std::env::var_os("GRAIL_UPDATE_BASELINE").is_some() {
        let text: String = passing.iter().map(|id| format!("{id}\n")).collect();
        std::fs::write(baseline_path, text).expect("write baseline");
        return;
    }
    let baseline = std::fs::read_to_string(baseline_path).unwrap_or_default();
    let regressions: Vec<&str> = baseline
        .lines()
        .filter(|id| !id.is_empty() && !passing.contains(*id))
        .collect();
    assert!(
        regressions.is_empty(),
        "regressions against the baseline: {regressions:#?}"
    );
}

/// Like [`check_against_baseline`] for a run over part of a corpus: only the baseline's
/// entries among `ran` are compared, and the baseline is never rewritten.
#[allow(dead_code)] // Not every runner that includes this file runs a subset.
pub fn check_subset_against_baseline(
    baseline_path: &Path,
    ran: &BTreeSet<String>,
    passing: &BTreeSet<String>,
) {
    let baseline = std::fs::read_to_string(baseline_path).unwrap_or_default();
    let regressions: Vec<&str> = baseline
        .lines()
        .filter(|id| ran.contains(*id) && !passing.contains(*id))
        .collect();
    assert!(
        regressions.is_empty(),
        "regressions against the baseline: {regressions:#?}"
    );
}
