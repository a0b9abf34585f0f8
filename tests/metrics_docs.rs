//! docs/metrics.md against what the suite's real scrapes exported: every
//! documented family was seen by some test scrape (or its row says when it
//! is not there: "Conditional:"), and every family a scrape saw is
//! documented, in the families' tables or the generated `mntr` table. The
//! harness records each scrape's families (`common::scraped_families_dir`);
//! scripts/test.sh runs this after the suite, so it reads a whole run.

mod common;

use std::collections::BTreeSet;

/// Families the docs name in a table row (the mntr table names several in
/// one row), with whether the row marks the family conditional.
fn documented() -> (BTreeSet<String>, BTreeSet<String>) {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/metrics.md")).unwrap();
    let (mut all, mut conditional) = (BTreeSet::new(), BTreeSet::new());
    for line in docs.lines().filter(|l| l.starts_with("| `")) {
        let mut cells = line.split(" | ");
        let first = cells.next().unwrap_or_default();
        let rest: String = cells.collect::<Vec<_>>().join(" | ");
        // A families table names the family first; the mntr table names the
        // key first and the metrics in its second column.
        let names = if first.starts_with("| `zk_") {
            rest.split(" | ").next().unwrap_or_default().to_owned()
        } else {
            first.to_owned()
        };
        for name in names
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| n.starts_with("zookeeper_"))
        {
            all.insert(name.to_owned());
            if rest.contains("Conditional:") {
                conditional.insert(name.to_owned());
            }
        }
    }
    (all, conditional)
}

/// A family's name without a counter's `_total` (the docs name counters
/// with it; `# TYPE` does in the text format, not in OpenMetrics).
fn exposed(name: &str) -> &str {
    name.strip_suffix("_total").unwrap_or(name)
}

#[test]
#[ignore = "reads the scrapes of a whole suite run: scripts/test.sh runs it after the suite"]
fn docs_list_exactly_what_the_suite_scraped() {
    let dir = common::scraped_families_dir();
    let mut scraped = BTreeSet::new();
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run the suite first (scripts/test.sh)",
                dir.display()
            )
        })
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "txt"))
    {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        scraped.extend(text.lines().map(str::to_owned));
    }
    assert!(
        scraped.len() > 100,
        "too few families recorded: {scraped:?}"
    );
    let (docs, conditional) = documented();
    let docs_exposed: BTreeSet<&str> = docs.iter().map(|n| exposed(n)).collect();
    let scraped_exposed: BTreeSet<&str> = scraped.iter().map(|n| exposed(n)).collect();
    let never: Vec<&String> = docs
        .iter()
        .filter(|n| !scraped_exposed.contains(exposed(n)) && !conditional.contains(*n))
        .collect();
    let undocumented: Vec<&String> = scraped
        .iter()
        .filter(|f| f.starts_with("zookeeper_") && !docs_exposed.contains(exposed(f)))
        .collect();
    assert!(
        never.is_empty() && undocumented.is_empty(),
        "documented in docs/metrics.md but never scraped by a test (test it, or say \"Conditional:\" when it is there): {never:?}\n\
         scraped but not documented: {undocumented:?}"
    );
}

/// No series a test scrape saw carries a label the ecosystem reserves
/// (`common::labels::RESERVED`): Prometheus would keep the agent's value
/// and drop its own target or external label (docs/metrics.md).
#[test]
#[ignore = "reads the scrapes of a whole suite run: scripts/test.sh runs it after the suite"]
fn no_scraped_series_carries_a_reserved_label() {
    let dir = common::scraped_families_dir();
    let mut labels = BTreeSet::new();
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}: run the suite first", dir.display()))
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "labels"))
    {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        labels.extend(text.lines().filter_map(|l| {
            l.split_once('\t')
                .map(|(label, sample)| (label.to_owned(), sample.to_owned()))
        }));
    }
    let names: BTreeSet<&str> = labels.iter().map(|(l, _)| l.as_str()).collect();
    assert!(
        names.contains("ensemble") && names.contains("election") && names.contains("server"),
        "too few labels recorded: {names:?}"
    );
    let reserved: Vec<&(String, String)> = labels
        .iter()
        .filter(|(l, _)| common::labels::RESERVED.contains(&l.as_str()))
        .collect();
    assert!(
        reserved.is_empty(),
        "series carry labels the ecosystem reserves (label, one series): {reserved:?}"
    );
}
