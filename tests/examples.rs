//! Every configuration the project ships (examples/*.toml, the Kubernetes
//! ConfigMap) is valid for `check-config`, and quiet over idle trees: laid
//! out on a real ZooKeeper (an election with its master, a free lock, a
//! registry at its minimum, a retired account the file excludes), watched
//! by the agent and judged by Debian's Prometheus with the shipped rules,
//! it raises no critical alert; taking a master away then does.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::program::{alertmanager, alerts_seen, mixin_rules, prometheus};
use common::*;
use toml::{Table, Value};
use yaml_rust2::YamlLoader;
use zookeeper_client::{Acls, Client, CreateMode};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const T: Duration = Duration::from_secs(90);

/// (name, configuration text) of every shipped configuration.
fn shipped() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    for p in examples {
        let name = p.strip_prefix(ROOT).unwrap().display().to_string();
        out.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    let cm =
        std::fs::read_to_string(Path::new(ROOT).join("deploy/kubernetes/configmap.yaml")).unwrap();
    let doc = YamlLoader::load_from_str(&cm).unwrap().remove(0);
    out.push((
        "deploy/kubernetes/configmap.yaml".into(),
        doc["data"]["config.toml"].as_str().unwrap().to_owned(),
    ));
    assert!(out.len() >= 2, "{out:?}");
    out
}

async fn ensure(c: &Client, path: &str, mode: CreateMode) {
    let mut at = String::new();
    let parts: Vec<&str> = path[1..].split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push('/');
        at.push_str(part);
        let last = i + 1 == parts.len();
        let m = if last { mode } else { CreateMode::Persistent };
        match c.create(&at, b"", &m.with_acls(Acls::anyone_all())).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

/// A path the glob matches: every `*` becomes `name`.
fn instance(glob: &str, name: &str) -> String {
    glob.split('/')
        .map(|s| if s == "*" { name } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

/// What the test laid out under one cluster's chroot, for the control.
struct Laid {
    /// The chroot-relative path of an election with a master, and the
    /// session holding its candidate.
    election: Option<(String, Client)>,
}

/// Points `config` at the test server under one chroot per cluster, lays out
/// idle trees for every configured tree and returns the new text.
async fn idle(zk: &ZkServer, config: &str, port: u16, base: &str) -> (String, Vec<(String, Laid)>) {
    let mut t: Table = config.parse().unwrap_or_else(|e| panic!("{e}"));
    t.insert(
        "web".into(),
        Value::Table(Table::from_iter([(
            "listen_address".to_owned(),
            Value::String(format!("127.0.0.1:{port}")),
        )])),
    );
    let admin = client(&zk.address()).await;
    let mut laid = Vec::new();
    for cluster in t["clusters"].as_array_mut().unwrap() {
        let c = cluster.as_table_mut().unwrap();
        let name = c["name"].as_str().unwrap().to_owned();
        let chroot = format!("{base}/{name}");
        ensure(&admin, &chroot, CreateMode::Persistent).await;
        c.insert(
            "servers".into(),
            Value::Array(vec![Value::String(zk.address())]),
        );
        c.insert("chroot".into(), Value::String(chroot.clone()));
        if let Some(Value::Table(f)) = c.get_mut("four_letter_words") {
            f.remove("admin_url");
        }
        let at = |p: &str| format!("{chroot}{p}");
        let mut election = None;
        for e in c
            .get("elections")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = e["path"].as_str().unwrap();
            let node = e.get("style").and_then(Value::as_str) == Some("node");
            let idle = instance(path, "idle");
            let holder = client(&zk.address()).await;
            if node {
                ensure(&holder, &at(&idle), CreateMode::Ephemeral).await;
            } else {
                ensure(&admin, &at(&idle), CreateMode::Persistent).await;
                candidate(&holder, &at(&idle), "n_", b"host-1").await;
            }
            for ex in e
                .get("exclude")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // A retired account: its node stays, nobody competes.
                let retired = ex.as_str().unwrap().replace(['*', '?'], "x");
                if !node {
                    ensure(&admin, &at(&retired), CreateMode::Persistent).await;
                }
            }
            election.get_or_insert((idle, holder));
        }
        for l in c
            .get("locks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // A lock nobody holds: normal.
            ensure(
                &admin,
                &at(&instance(l["path"].as_str().unwrap(), "idle")),
                CreateMode::Persistent,
            )
            .await;
        }
        for g in c
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let group = at(&instance(g["path"].as_str().unwrap(), "idle"));
            ensure(&admin, &group, CreateMode::Persistent).await;
            let n = g
                .get("min_members")
                .and_then(Value::as_integer)
                .unwrap_or(1)
                .max(1);
            for i in 0..n {
                ensure(
                    &admin,
                    &format!("{group}/10.0.0.{i}:8080"),
                    CreateMode::Ephemeral,
                )
                .await;
            }
        }
        laid.push((name, Laid { election }));
    }
    // The members registered above live with this session.
    std::mem::forget(admin);
    (toml::to_string(&t).unwrap(), laid)
}

/// The compose stack configures its agent with flags: `check-config`
/// takes them as the agent would.
#[test]
fn the_compose_stacks_flags_are_valid() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("deploy/docker-compose.yml")).unwrap();
    let doc = YamlLoader::load_from_str(&text).unwrap().remove(0);
    let flags: Vec<String> = doc["services"]["exporter"]["command"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert!(flags.iter().any(|f| f == "--election"), "{flags:?}");
    check_config(
        &flags.iter().map(String::as_str).collect::<Vec<_>>(),
        "the compose stack",
    );
}

/// `zk-election-exporter check-config ARGS` must accept the configuration.
fn check_config(args: &[&str], what: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zk-election-exporter"))
        .arg("check-config")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{what}: check-config {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_shipped_configuration_is_valid_and_quiet_over_idle_trees() {
    let zk = shared_server();
    let base = unique_path("examples");
    let mut agents = Vec::new();
    let mut controls = Vec::new();
    for (i, (name, text)) in shipped().into_iter().enumerate() {
        let dir = temp_dir("examples");
        let shipped_file = dir.join("shipped.toml");
        std::fs::write(&shipped_file, &text).unwrap();
        check_config(&["--config", shipped_file.to_str().unwrap()], &name);
        let port = free_port();
        let (config, laid) = idle(zk, &text, port, &format!("{base}/{i}")).await;
        let file = dir.join("idle.toml");
        std::fs::write(&file, &config).unwrap();
        let agent = Exporter::spawn(&args(&["--config", file.to_str().unwrap()]), &[], port);
        for (cluster, l) in laid {
            if let Some((election, holder)) = l.election {
                controls.push((name.clone(), cluster, election, holder));
            }
        }
        agents.push((name, agent));
    }
    // Every tree synced and every idle election with its master.
    for (name, agent) in &agents {
        wait_for_async(&format!("{name}: trees synced"), T, || {
            let m = agent.metrics()?;
            let synced = m.series("zookeeper_tree_synced", &[]);
            if !synced.is_empty() && synced.iter().all(|(_, v)| *v == 1.0) {
                Ok(())
            } else {
                Err(format!("{synced:?}"))
            }
        })
        .await;
    }
    for (name, cluster, election, _) in &controls {
        let agent = &agents.iter().find(|(n, _)| n == name).unwrap().1;
        let election = instance(election, "idle");
        agent
            .until_values(
                &format!("{name}: {cluster}'s idle election has its master"),
                T,
                &[(
                    "zookeeper_election_has_master",
                    &[("ensemble", cluster), ("election", &election)],
                    Some(1.0),
                )],
            )
            .await;
    }

    // The shipped rules with every `for` at 3 s and the member window at
    // 10 s: stricter than production, so what stays quiet here stays quiet there.
    let rules = mixin_rules("memberWindow: '10s'", "3s");
    let am = alertmanager("examples-am");
    let ports: Vec<u16> = agents.iter().map(|(_, a)| a.port).collect();
    let prom = prometheus("examples-prom", &rules, "1s", am.port, &ports);
    // 20 evaluations with every agent scraped: every `for` has had its time.
    wait_for("20 s of scrapes", T, || {
        let r = common::program::query(
            &prom,
            "min(count_over_time(up{job=\"zk-election-exporter\"}[1m]))",
        )?;
        let n = r
            .first()
            .and_then(|s| s["value"][1].as_str())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if n >= 20.0 && r.len() == 1 {
            Ok(())
        } else {
            Err(format!("{n} scrapes"))
        }
    });
    // Judged over the last 15 s: before its first scrape of the job this
    // Prometheus sees `up` absent, which its 3 s ExporterDown (2m shipped)
    // takes for an agent gone; every other condition has held since the
    // agents started, long enough for its 3 s `for`.
    let critical = alerts_seen(&prom, "severity=\"critical\"", "15s").unwrap();
    assert!(
        critical.is_empty(),
        "critical alerts over idle trees: {critical:?}"
    );

    // The control: an idle election loses its master; that pages.
    let (name, cluster, election, holder) = controls.remove(0);
    drop(holder);
    let election_label = instance(&election, "idle");
    wait_for(&format!("{name}: the control pages"), T, || {
        let firing = alerts_seen(
            &prom,
            &format!(
                "alertname=\"ZooKeeperElectionNoMaster\",alertstate=\"firing\",ensemble=\"{cluster}\",election=\"{election_label}\""
            ),
            "10s",
        )?;
        if firing.is_empty() {
            Err("not firing yet".into())
        } else {
            Ok(())
        }
    });
}
