//! The label names the Prometheus ecosystem reserves for itself: target
//! labels (`job`, `instance`), Kubernetes service discovery's and
//! kube-state-metrics' (`namespace`, `pod`, `node`, `service`,
//! `container`) and the external labels of multi-cluster setups (`cluster`,
//! `prometheus`, `replica`, which Thanos and Mimir deduplicate and route
//! by). Prometheus keeps a series' own value of a label it would add, so a
//! series of the agent carrying one of them would hide where it came from.

use std::collections::BTreeSet;

pub const RESERVED: [&str; 10] = [
    "cluster",
    "namespace",
    "pod",
    "node",
    "job",
    "instance",
    "service",
    "container",
    "prometheus",
    "replica",
];

/// (label name, sample name) of every sample of an exposition in the text
/// format or OpenMetrics. Label values are read with their escapes, so a
/// value holding `,`, `=`, `"` or `}` is no label name.
pub fn sample_labels(body: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for line in body.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else {
            continue;
        };
        let mut chars = rest.chars();
        loop {
            let label: String = chars.by_ref().take_while(|c| *c != '=').collect();
            let label = label.trim_start_matches(',').trim();
            if label.is_empty() || label.starts_with('}') {
                break;
            }
            out.insert((label.to_owned(), name.to_owned()));
            // The opening quote, then the value up to an unescaped quote.
            if chars.next() != Some('"') {
                break;
            }
            let mut escaped = false;
            for c in chars.by_ref() {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => break,
                    _ => escaped = false,
                }
            }
        }
    }
    out
}
