use super::*;
use crate::fourlw::parse::parse_mntr;
use std::path::Path;

const BEGIN: &str =
    "<!-- mntr-table:begin (generated: ZKEE_BLESS=1 cargo test --lib mntr_table) -->";
const END: &str = "<!-- mntr-table:end -->";
/// Keys the hand-written 3.9 fixture adds to test what an unknown key
/// becomes (tests/fixtures/README.md): no ZooKeeper sends them, so the
/// table of real keys leaves them out.
const SYNTHETIC: &[&str] = &["zk_brand_new_gauge_in_3_9"];
/// The fixtures captured from real servers (the rest are hand-written).
const REAL: &str = "3.8.0";

/// The key a sample's row is for, and what follows its name there.
fn row_of(s: &Sample) -> (&str, &'static str) {
    let (source, alias) = match s.source.split_once(", deprecated name of ") {
        Some((source, _)) => (source, true),
        None => (s.source.as_str(), false),
    };
    let label = match (s.set_key.is_some(), alias) {
        (true, _) => " (`key` label)",
        (false, true) => " (deprecated 0.1 name)",
        (false, false) => "",
    };
    (source, label)
}

fn table() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut rows: BTreeMap<String, (String, String, BTreeSet<String>)> = BTreeMap::new();
    let mut versions: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    versions.sort();
    for version in versions {
        for role in std::fs::read_dir(&version).unwrap().flatten() {
            let Ok(text) = std::fs::read_to_string(role.path().join("mntr.txt")) else {
                continue;
            };
            let Ok(mntr) = parse_mntr(&text) else {
                continue;
            };
            let v = version.file_name().unwrap().to_string_lossy().into_owned();
            let m = map_mntr(&mntr);
            for s in m
                .samples
                .iter()
                .filter(|s| !SYNTHETIC.contains(&s.source.as_str()))
            {
                let (name, kind) = match s.kind {
                    Kind::Counter => (format!("{}_total", s.name), "counter"),
                    Kind::Gauge => (s.name.clone(), "gauge"),
                };
                let (source, label) = row_of(s);
                let e = rows
                    .entry(source.to_owned())
                    .or_insert_with(|| (String::new(), kind.to_owned(), BTreeSet::new()));
                if !e.0.contains(&name) {
                    if !e.0.is_empty() {
                        e.0.push_str(", ");
                    }
                    e.0.push_str(&format!("`{name}`{label}"));
                }
                e.2.insert(v.clone());
            }
            for s in &m.summaries {
                let as_sample = Sample {
                    name: s.name.clone(),
                    kind: Kind::Gauge,
                    source: s.source.clone(),
                    set_key: s.set_key.clone(),
                    value: 0,
                };
                let (source, label) = row_of(&as_sample);
                let e = rows
                    .entry(source.to_owned())
                    .or_insert_with(|| (String::new(), "summary".to_owned(), BTreeSet::new()));
                e.1 = "summary + gauges".to_owned();
                if !e.0.contains(&format!("`{}`", s.name)) {
                    let text = format!("`{}`{label} (quantiles, `_sum`, `_count`)", s.name);
                    e.0 = match (e.0.is_empty(), !label.contains("deprecated")) {
                        (true, _) => text,
                        (false, true) => format!("{text}, {}", e.0),
                        (false, false) => format!("{}, {text}", e.0),
                    };
                }
                e.2.insert(v.clone());
            }
        }
    }
    let mut out =
        format!("{BEGIN}\n| mntr key | metric | type | seen in |\n| --- | --- | --- | --- |\n");
    // The summary sets a real server sends once it has such traffic
    // (reads per namespace, a learner's queue), which no fixture shows.
    for set in ID_SETS.iter().chain(NAMESPACE_SETS) {
        let source = format!("zk_{{avg,min,max,cnt,sum,p50,p95,p99,p999}}_<key>_{set}");
        if !rows
            .values()
            .any(|r| r.0.contains(&format!("`zookeeper_{set}`")))
        {
            rows.insert(
                source,
                (
                    format!("`zookeeper_{set}` (`key` label) (quantiles, `_sum`, `_count`), `zookeeper_{set}_min` (`key` label), `zookeeper_{set}_max` (`key` label)"),
                    "summary + gauges".to_owned(),
                    BTreeSet::new(),
                ),
            );
        }
    }
    for (source, (names, kind, seen)) in rows {
        let seen: Vec<String> = seen.into_iter().collect();
        // Keys only the hand-written fixtures of older versions carry:
        // the servers the tests run (3.8) never send them.
        let note = if seen.is_empty() {
            "Conditional: sent once the server has such traffic; not in the fixtures"
        } else if !seen.iter().any(|v| v == REAL) {
            " (Conditional: not sent by 3.8)"
        } else {
            ""
        };
        out.push_str(&format!(
            "| `{source}` | {names} | {kind} | {}{note} |\n",
            seen.join(", ")
        ));
    }
    out.push_str(END);
    out
}

#[test]
fn mntr_table_in_docs_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md");
    let docs = std::fs::read_to_string(&path).unwrap();
    let (Some(b), Some(e)) = (docs.find(BEGIN), docs.find(END)) else {
        panic!("docs/metrics.md lacks the mntr-table markers");
    };
    let current = &docs[b..e + END.len()];
    let fresh = table();
    if std::env::var_os("ZKEE_BLESS").is_some() {
        std::fs::write(&path, docs.replace(current, &fresh)).unwrap();
        return;
    }
    assert!(
        current == fresh,
        "the mntr table in docs/metrics.md is stale; run ZKEE_BLESS=1 cargo test --lib mntr_table"
    );
}
