//! The shipped alert rules: valid for Prometheus (`promtool check rules`),
//! their unit tests pass (`promtool test rules`), every alert has a runbook,
//! severity and annotations, and every metric they use is documented.

use std::collections::BTreeSet;
use std::process::Command;

// The reserved names alone, not the harness (docs/alerts.md, "Labels").
#[allow(dead_code)]
#[path = "common/labels.rs"]
mod labels;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn promtool(args: &[&str]) -> String {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("promtool (Debian package prometheus) must be installed");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn rules_are_valid() {
    let out = promtool(&["check", "rules", "alerts/zookeeper.rules.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
}

#[test]
fn every_alert_passes_its_unit_tests() {
    let out = promtool(&["test", "rules", "alerts/tests/zookeeper.rules.test.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
}

/// The SLO's burn-rate alerts, over hours and days (their own file, with
/// a coarser evaluation interval).
#[test]
fn the_slo_alerts_pass_their_unit_tests() {
    let out = promtool(&["test", "rules", "alerts/tests/slo.rules.test.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
}

/// The lease alerts (split brain, an expired heartbeat, a blind source).
#[test]
fn the_lease_alerts_pass_their_unit_tests() {
    let out = promtool(&["test", "rules", "alerts/tests/lease.rules.test.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
}

/// The migration records (alerts/compat.rules.yml): rules written for other
/// exporters fire and stay quiet on them as they did (docs/migrating.md).
#[test]
fn the_migration_records_serve_the_old_rules() {
    let out = promtool(&["test", "rules", "alerts/tests/compat.rules.test.yml"]);
    assert!(out.contains("SUCCESS"), "{out}");
    // Each record reads families this agent documents (a typo would
    // record nothing, silently).
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/compat.rules.yml")).unwrap();
    let docs = std::fs::read_to_string(format!("{ROOT}/docs/metrics.md")).unwrap();
    let mut read = BTreeSet::new();
    for expr in rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr: "))
    {
        let mut rest = expr;
        while let Some(at) = rest.find("zookeeper_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            read.insert(name);
        }
    }
    assert!(read.len() > 20, "{read:?}");
    for name in &read {
        // A summary's _sum and _count are documented with the summary.
        let documented = std::iter::once(name.as_str())
            .chain(
                ["_sum", "_count"]
                    .iter()
                    .filter_map(|s| name.strip_suffix(s)),
            )
            .any(|n| docs.contains(&format!("`{n}`")));
        assert!(documented, "{name} is not a documented family");
    }
    // Every summary family documented (the mntr table) has its provider
    // record, _sum and _count: a summary added to the agent needs its record.
    let recorded: BTreeSet<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
        .collect();
    let mut summaries = 0;
    for row in docs.lines().filter(|l| l.contains("| summary")) {
        let Some(family) = row
            .split('`')
            .nth(3)
            .filter(|f| f.starts_with("zookeeper_"))
        else {
            continue;
        };
        let provider = family
            .strip_prefix("zookeeper_mntr_")
            .or_else(|| family.strip_prefix("zookeeper_"))
            .unwrap();
        for suffix in ["_sum", "_count"] {
            assert!(
                recorded.contains(format!("{provider}{suffix}").as_str()),
                "the summary {family} has no record {provider}{suffix}"
            );
        }
        summaries += 1;
    }
    assert!(summaries > 60, "{summaries} summaries in docs/metrics.md");
    let migrating = std::fs::read_to_string(format!("{ROOT}/docs/migrating.md")).unwrap();
    for record in rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: "))
    {
        assert!(
            migrating.contains(&format!("`{record}`")),
            "docs/migrating.md does not name the record {record}"
        );
    }
}

/// (alert, expression, annotation and label keys) from the rules file.
fn alerts() -> Vec<(String, String, BTreeSet<String>)> {
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/zookeeper.rules.yml")).unwrap();
    let mut out: Vec<(String, String, BTreeSet<String>)> = Vec::new();
    // Recording rules follow the alerts; their lines belong to no alert.
    let mut in_alert = false;
    for line in rules.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("- alert: ") {
            out.push((name.to_owned(), String::new(), BTreeSet::new()));
            in_alert = true;
        } else if t.starts_with("- record: ") || t.starts_with("- name: ") {
            in_alert = false;
        } else if let (true, Some(last)) = (in_alert, out.last_mut()) {
            if let Some(expr) = t.strip_prefix("expr: ") {
                last.1 = expr.trim_matches('"').to_owned();
            } else if let Some((key, _)) = t.split_once(": ") {
                last.2.insert(key.to_owned());
            }
        }
    }
    out
}

#[test]
fn every_alert_is_complete_and_has_a_runbook() {
    let runbooks = std::fs::read_to_string(format!("{ROOT}/docs/runbooks.md")).unwrap();
    let tests = ["zookeeper", "slo", "lease"]
        .map(|f| {
            std::fs::read_to_string(format!("{ROOT}/alerts/tests/{f}.rules.test.yml")).unwrap()
        })
        .concat();
    let all = alerts();
    assert!(all.len() >= 27, "{}", all.len());
    for (name, _, keys) in &all {
        assert!(name.starts_with("ZooKeeper"), "{name}");
        for key in ["severity", "summary", "description", "runbook_url"] {
            assert!(keys.contains(key), "{name} lacks {key}");
        }
        assert!(
            runbooks.contains(&format!("\n## {name}\n")),
            "{name} has no section in docs/runbooks.md"
        );
        assert!(
            tests.contains(&format!("\"{name} fires\"")),
            "{name} has no firing test"
        );
        assert!(
            tests.contains(&format!("\"{name} stays quiet\"")),
            "{name} has no quiet test"
        );
    }
}

#[test]
fn every_metric_in_the_rules_is_documented() {
    let docs = std::fs::read_to_string(format!("{ROOT}/docs/metrics.md")).unwrap();
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/zookeeper.rules.yml")).unwrap();
    for (name, expr, _) in alerts() {
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')) {
            // A recording rule's series: recorded by the rules file itself
            // (a subquery's range, `10m:`, is no name).
            if word.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            if word.contains(':') {
                assert!(
                    rules.contains(&format!("- record: \"{word}\"")),
                    "{name} uses {word}, which no recording rule records"
                );
                continue;
            }
            if !word.starts_with("zookeeper_") {
                continue;
            }
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| word.strip_suffix(s))
                .unwrap_or(word);
            let documented = [word, base]
                .iter()
                .any(|w| docs.contains(&format!("`{w}`")));
            assert!(
                documented,
                "{name} uses {word}, which docs/metrics.md does not document"
            );
        }
    }
}

/// Label names between the parentheses after each `by (` of `expr`.
fn by_labels(expr: &str) -> BTreeSet<String> {
    expr.split("by (")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .flat_map(|(list, _)| list.split(',').map(|l| l.trim().to_owned()))
        .filter(|l| !l.is_empty())
        .collect()
}

/// docs/alerts.md's "Labels" table: alert -> the reserved labels it keeps.
fn documented_keeps() -> Vec<(String, BTreeSet<String>)> {
    let docs = std::fs::read_to_string(format!("{ROOT}/docs/alerts.md")).unwrap();
    let section = docs
        .split("### Labels")
        .nth(1)
        .expect("docs/alerts.md has a Labels section");
    let section = section.split("\n#").next().unwrap_or_default();
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    };
    let mut out = Vec::new();
    for row in section.lines().filter(|l| l.starts_with("| `ZooKeeper")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let keeps: BTreeSet<String> = ticked(cells[1]).into_iter().collect();
        for alert in ticked(cells[0]) {
            out.push((alert, keeps.clone()));
        }
    }
    out
}

/// No alert carries a label the ecosystem reserves, unless docs/alerts.md
/// says it keeps it (an alert about the scrape target keeps the target's
/// own labels). An alert's labels are read from its aggregations and from
/// the exact labels its promtool cases expect (which cover the alerts that
/// do not aggregate).
#[test]
fn no_alert_carries_a_reserved_label_it_does_not_document() {
    let keeps = documented_keeps();
    assert!(keeps.len() >= 6, "{keeps:?}");
    let mut expected: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for file in ["zookeeper", "slo", "lease"] {
        let text =
            std::fs::read_to_string(format!("{ROOT}/alerts/tests/{file}.rules.test.yml")).unwrap();
        let mut alert = String::new();
        let mut in_labels = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix("alertname: ") {
                alert = name.to_owned();
            } else if t == "- exp_labels:" {
                in_labels = true;
            } else if t.ends_with(':') && !t.contains(' ') || t.starts_with("exp_annotations") {
                in_labels = false;
            } else if in_labels && let Some((key, _)) = t.split_once(": ") {
                expected
                    .entry(alert.clone())
                    .or_default()
                    .insert(key.to_owned());
            }
        }
    }
    let mut wrong = Vec::new();
    for (alert, expr, _) in alerts() {
        let mut labels = by_labels(&expr);
        labels.extend(expected.get(&alert).cloned().unwrap_or_default());
        assert!(
            labels.contains("ensemble") || labels.contains("job"),
            "{alert}: {labels:?}"
        );
        let allowed: BTreeSet<String> = keeps
            .iter()
            .filter(|(a, _)| *a == alert)
            .flat_map(|(_, k)| k.iter().cloned())
            .collect();
        for label in labels {
            if labels::RESERVED.contains(&label.as_str()) && !allowed.contains(&label) {
                wrong.push(format!("{alert}: {label}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "alerts carrying a reserved label docs/alerts.md does not say they keep: {wrong:?}"
    );
}
