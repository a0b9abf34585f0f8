//! The whole exposition, without servers: a golden test over the fixture
//! set, and a property test that any reply bytes render into output a real
//! Prometheus parser (`promtool check metrics`) accepts.

use std::time::{Duration, SystemTime};

mod common;

use common::promtool_check;
use proptest::prelude::*;
use zk_election_exporter::fourlw::{self, Command as Word};
use zk_election_exporter::metrics::Exposition;
use zk_election_exporter::model::Now;
use zk_election_exporter::model::candidate::IdentityMode;
use zk_election_exporter::model::ensemble::{Exchange, ServerPoll};
use zk_election_exporter::model::tree::{ChildNode, Tree, TreePattern};
use zk_election_exporter::model::{ClusterState, SharedCluster};
use zk_election_exporter::os::ProcessStats;

fn fixture(path: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_default()
}

fn exchange(command: Word, raw: &str) -> Exchange {
    Exchange {
        command,
        duration: Duration::from_millis(3),
        result: fourlw::interpret(command, raw),
    }
}

/// A server polled with every default command, replies from `dir`.
fn poll_from(server: &str, dir: &str) -> ServerPoll {
    ServerPoll {
        server: server.into(),
        exchanges: fourlw::Command::DEFAULT
            .iter()
            .map(|c| exchange(*c, &fixture(&format!("{dir}/{}.txt", c.name()))))
            .collect(),
    }
}

fn render(cluster: ClusterState) -> String {
    let exposition = Exposition::new(vec![SharedCluster::new(cluster)]);
    exposition.render(false).unwrap()
}

/// Fixed figures of the agent's own process, so the golden holds the
/// `process_*` families' names, types and help as a scrape shows them.
fn process() -> Option<ProcessStats> {
    Some(ProcessStats {
        cpu_seconds: 12.5,
        resident_bytes: 25_165_824,
        virtual_bytes: 1_073_741_824,
        threads: 9,
        start_time_seconds: 1_700_000_000.25,
        open_fds: 17,
        max_fds: Some(65_536),
    })
}

fn golden_cluster() -> ClusterState {
    let mut tree = Tree::elections(
        TreePattern::parse("/wechat/bots/*").unwrap(),
        IdentityMode::Data,
    );
    let child = |name: &str, data: &str| ChildNode {
        name: name.into(),
        data: data.as_bytes().to_vec(),
        ephemeral_owner: 7,
        ctime_ms: 1_700_000_000_000,
    };
    tree.apply_listing(
        vec![(
            "/wechat/bots/bot_1".into(),
            vec![
                child("instance_0000000001", "phone-a"),
                child("instance_0000000002", "phone-b"),
            ],
        )],
        Now {
            mono: std::time::Instant::now(),
            wall: SystemTime::UNIX_EPOCH,
        },
    );
    let cluster = ClusterState::new("golden".into(), vec![tree], true);
    cluster.ensemble().collected(vec![
        poll_from("zk1:2181", "3.8.0/leader"),
        poll_from("zk2:2181", "3.8.0/follower"),
        poll_from("zk3:2181", "3.8.0/not-serving"),
        poll_from("old:2181", "3.4-doc/leader"),
        poll_from("new:2181", "3.9-doc/leader"),
        poll_from("locked:2181", "3.8.0/default-whitelist"),
    ]);
    cluster
}

/// The first line where `expected` and `actual` differ, with three lines of
/// context from each, and the line counts when they differ in length.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let at = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    let window = |lines: &[&str], sign: char| -> String {
        lines
            .iter()
            .enumerate()
            .skip(at.saturating_sub(3))
            .take(7)
            .map(|(i, l)| format!("{sign}{:>5} {l}\n", i + 1))
            .collect()
    };
    let mut out = format!("first difference at line {}\n", at + 1);
    out += &window(&e, '-');
    out += &window(&a, '+');
    if e.len() != a.len() {
        out += &format!("golden has {} lines, the rendering {}\n", e.len(), a.len());
    }
    out
}

#[test]
fn golden_exposition_of_the_fixture_set() {
    let exposition =
        Exposition::new(vec![SharedCluster::new(golden_cluster())]).with_process(process);
    let rendered: String = exposition
        .render(false)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("zookeeper_exporter_build_info"))
        .map(|l| format!("{l}\n"))
        .collect();
    promtool_check(&rendered).unwrap();
    let path = format!(
        "{}/tests/golden/exposition.prom",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("ZKEE_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
        std::fs::write(&path, &rendered).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    if golden != rendered {
        panic!(
            "exposition differs from tests/golden/exposition.prom (review, then ZKEE_BLESS=1 cargo test --test exposition):\n{}",
            first_difference(&golden, &rendered)
        );
    }
    let reserved: Vec<_> = common::labels::sample_labels(&rendered)
        .into_iter()
        .filter(|(l, _)| common::labels::RESERVED.contains(&l.as_str()))
        .collect();
    assert!(
        reserved.is_empty(),
        "labels the ecosystem reserves: {reserved:?}"
    );
    // Spot checks that the golden file says what the docs promise.
    assert!(
        rendered.contains("zookeeper_ensemble_leaders{ensemble=\"golden\"} 3"),
        "the 3.8, 3.4 and 3.9 leaders"
    );
    assert!(rendered.contains(
        "zookeeper_fourlw_skipped_lines_total{ensemble=\"golden\",server=\"new:2181\"} 3"
    ));
    assert!(rendered.contains("# TYPE zookeeper_readlatency summary"));
    assert!(rendered.contains("zookeeper_latency_avg{ensemble=\"golden\",server=\"old:2181\"}"));
}

fn any_reply() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        "(zk_[a-z_{}=\\\\\".-]{1,10}\t[-0-9.eEa-z{}\"\\\\]{0,8}\n){0,12}",
        "(Zookeeper version: .{0,20}\n)?(Mode: [a-z-]{0,10}\n)?(Zxid: 0x[0-9a-fz]{0,18}\n)?(Node count: [0-9a-z]{0,12}\n)?",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn any_reply_renders_valid_exposition(replies in proptest::collection::vec(any_reply(), 5)) {
        let cluster = ClusterState::new("fuzz\"\\\n".into(), vec![], true);
        let exchanges = fourlw::Command::DEFAULT.iter().zip(&replies).map(|(c, r)| exchange(*c, r)).collect();
        cluster.ensemble().collected(vec![ServerPoll { server: "h\"o\\s\nt:1".into(), exchanges }]);
        let text = render(cluster);
        let checked = promtool_check(&text);
        prop_assert!(checked.is_ok(), "{}\n{}", checked.unwrap_err(), text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The hand-written election families, for elections whose paths,
    /// identities and cluster name hold what label values must escape,
    /// are exposition a real Prometheus parser accepts, one series of
    /// `has_master` per election.
    #[test]
    fn any_election_labels_render_valid_exposition(
        cluster in "[a-z\"\\\\\n é]{0,8}",
        elections in proptest::collection::btree_map(
            "[a-z0-9_\"\\\\\n é{}=,]{1,12}",
            proptest::collection::vec("[a-z\"\\\\\n é{}=]{0,10}", 0..3),
            1..6,
        ),
    ) {
        let mut tree = Tree::elections(TreePattern::parse("/e/*").unwrap(), IdentityMode::Data);
        let listing = elections
            .iter()
            .map(|(name, identities)| {
                let children = identities
                    .iter()
                    .enumerate()
                    .map(|(i, id)| ChildNode {
                        name: format!("n_{i:010}"),
                        data: id.as_bytes().to_vec(),
                        ephemeral_owner: 7,
                        ctime_ms: 1_700_000_000_000,
                    })
                    .collect();
                (format!("/e/{name}"), children)
            })
            .collect();
        tree.apply_listing(listing, Now { mono: std::time::Instant::now(), wall: SystemTime::UNIX_EPOCH });
        let text = render(ClusterState::new(cluster, vec![tree], false));
        let checked = promtool_check(&text);
        prop_assert!(checked.is_ok(), "{}\n{}", checked.unwrap_err(), text);
        let series = text.lines().filter(|l| l.starts_with("zookeeper_election_has_master{")).count();
        prop_assert_eq!(series, elections.len());
    }
}

/// Every mntr key real servers send, by version: (version, key).
fn real_mntr_keys() -> Vec<(String, String)> {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut keys = std::collections::BTreeSet::new();
    let dirs = |path: &std::path::Path| -> Vec<std::fs::DirEntry> {
        std::fs::read_dir(path)
            .map(|d| d.flatten().filter(|e| e.path().is_dir()).collect())
            .unwrap_or_default()
    };
    for version in dirs(std::path::Path::new(&dir)) {
        for role in dirs(&version.path()) {
            let text = std::fs::read_to_string(role.path().join("mntr.txt")).unwrap_or_default();
            if let Ok(fourlw::Reply::Mntr(m)) = fourlw::interpret(Word::Mntr, &text) {
                let v = version.file_name().to_string_lossy().into_owned();
                keys.extend(m.numbers().map(|(k, _)| (v.clone(), k.to_owned())));
            }
        }
    }
    keys.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any subset of the keys one real server version sends, with any
    /// finite values, renders as valid exposition with no key dropped: the
    /// typing never names two keys alike, and every name and value it
    /// writes is one a real Prometheus parser accepts.
    #[test]
    fn real_mntr_keys_round_trip_through_promtool(
        picks in proptest::sample::subsequence(real_mntr_keys(), 1..60),
        values in proptest::collection::vec(
            prop_oneof![any::<i64>().prop_map(|v| v as f64), -1e12f64..1e12, Just(0.0)],
            60,
        ),
    ) {
        let version = picks[0].0.clone();
        let reply: String = picks
            .iter()
            .filter(|(v, _)| *v == version)
            .zip(&values)
            .map(|((_, key), value)| format!("{key}\t{value}\n"))
            .collect();
        let cluster = ClusterState::new("c".into(), vec![], true);
        cluster.ensemble().collected(vec![ServerPoll {
            server: "zk:2181".into(),
            exchanges: vec![exchange(Word::Mntr, &reply)],
        }]);
        let text = render(cluster);
        let checked = promtool_check(&text);
        prop_assert!(checked.is_ok(), "{}\n{}", checked.unwrap_err(), reply);
        prop_assert!(
            text.contains("zookeeper_fourlw_mntr_dropped_keys{ensemble=\"c\",server=\"zk:2181\"} 0\n"),
            "a real key was dropped:\n{}",
            reply
        );
    }
}

/// The reader of label names the reserved-label checks rely on.
#[test]
fn sample_labels_reads_names_not_values() {
    let body = "# HELP x y\nx{a=\"1,b=\\\"2\\\"}\",c=\"}\"} 1\ny 2\nz{d=\"\"} 3\n";
    let got: Vec<String> = common::labels::sample_labels(body)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(got, ["a", "c", "d"]);
}
