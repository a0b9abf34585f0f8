//! One scrape parsed into samples, the lookups tests make of it, and
//! `promtool check metrics` on a whole exposition.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// One value a test waits for: metric name, labels it includes, value
/// (`None`: no such single series).
pub type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], Option<f64>);

/// Labels of one series.
pub type Labels = BTreeMap<String, String>;

/// Samples of one scrape: `name` -> list of (labels, value).
#[derive(Debug, Default)]
pub struct Metrics {
    pub samples: BTreeMap<String, Vec<(Labels, f64)>>,
}

impl Metrics {
    /// Parses the Prometheus text format, unescaping label values.
    pub fn parse(text: &str) -> Self {
        let mut samples: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (name, labels, rest) = match line.find('{') {
                Some(i) => {
                    let (labels, rest) = parse_labels(&line[i + 1..]);
                    (&line[..i], labels, rest)
                }
                None => {
                    let (name, rest) = line.split_once(' ').unwrap();
                    (name, BTreeMap::new(), rest)
                }
            };
            let value: f64 = rest.split_whitespace().next().unwrap().parse().unwrap();
            samples
                .entry(name.to_owned())
                .or_default()
                .push((labels, value));
        }
        Self { samples }
    }

    /// The value of the one series of `name` whose labels include `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching: Vec<f64> = self
            .series(name, labels)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        match matching.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The sum of every series of `name` whose labels include `labels`;
    /// `None` when there is none.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let matching = self.series(name, labels);
        (!matching.is_empty()).then(|| matching.iter().map(|(_, v)| v).sum())
    }

    /// All series of `name` whose labels include `labels`.
    pub fn series(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Vec<(BTreeMap<String, String>, f64)> {
        self.samples
            .get(name)
            .map(|all| {
                all.iter()
                    .filter(|(l, _)| {
                        labels
                            .iter()
                            .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Parses `k="v",k2="v2"} rest` into labels and the rest after `}`.
fn parse_labels(s: &str) -> (BTreeMap<String, String>, &str) {
    let mut labels = BTreeMap::new();
    let mut chars = s.char_indices().peekable();
    loop {
        while let Some((_, ' ' | ',')) = chars.peek() {
            chars.next();
        }
        let Some((start, c)) = chars.next() else {
            break;
        };
        if c == '}' {
            return (labels, &s[start + 1..]);
        }
        let mut key = String::from(c);
        for (_, c) in chars.by_ref() {
            if c == '=' {
                break;
            }
            key.push(c);
        }
        assert_eq!(chars.next().map(|c| c.1), Some('"'));
        let mut value = String::new();
        while let Some((_, c)) = chars.next() {
            match c {
                '\\' => match chars.next().map(|c| c.1) {
                    Some('n') => value.push('\n'),
                    Some(other) => value.push(other),
                    None => break,
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key, value);
    }
    (labels, "")
}

/// Labels of one election of the test cluster.
pub fn election_labels(election: &str) -> [(&str, &str); 2] {
    [("ensemble", "test"), ("election", election)]
}

/// Node name of the election's master, if exactly one master series exists.
pub fn master_node(m: &Metrics, election: &str) -> Option<String> {
    match m
        .series("zookeeper_election_master", &election_labels(election))
        .as_slice()
    {
        [(l, v)] if *v == 1.0 => l.get("znode").cloned(),
        _ => None,
    }
}

/// Identity of the election's master.
pub fn master_identity(m: &Metrics, election: &str) -> Option<String> {
    m.series("zookeeper_election_master", &election_labels(election))
        .first()
        .and_then(|(l, _)| l.get("identity").cloned())
}

/// Families typed from ZooKeeper's own mntr keys (their HELP starts with
/// `mntr zk_`): named as ZooKeeper names them, documented by the mntr table.
pub fn mntr_families(exposition: &str) -> std::collections::BTreeSet<&str> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# HELP "))
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, help)| help.starts_with("mntr zk_"))
        .map(|(name, _)| name)
        .collect()
}

/// Families whose names break a promtool lint rule on purpose: their names
/// are part of the documented interface. `zookeeper_node_count` mirrors
/// srvr's "Node count" (a gauge despite `_count`); `zookeeper_zxid_counter`
/// is the zxid's counter half (a gauge despite the word "counter").
const LINT_EXCEPTIONS: &[&str] = &["zookeeper_node_count", "zookeeper_zxid_counter"];

/// Runs `promtool check metrics` (Debian's prometheus package) on `text`.
/// Parse errors always fail. Lint hints (exit code 3) are accepted only for
/// families named after ZooKeeper's own mntr keys (HELP starting `mntr `,
/// names kept as ZooKeeper spells them) and [`LINT_EXCEPTIONS`].
pub fn promtool_check(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("promtool (Debian package prometheus) must be installed: {e}"))?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match out.status.code() {
        Some(0) => Ok(()),
        Some(3) if !report.contains("error while linting") => {
            let from_mntr = mntr_families(text);
            let ours: Vec<&str> = report
                .lines()
                .filter(|l| {
                    let name = l.split_whitespace().next().unwrap_or_default();
                    !from_mntr.contains(name) && !LINT_EXCEPTIONS.contains(&name)
                })
                .collect();
            if ours.is_empty() {
                Ok(())
            } else {
                Err(ours.join("\n"))
            }
        }
        _ => Err(report),
    }
}
