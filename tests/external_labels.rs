//! A multi-cluster Prometheus: its `global.external_labels` carry
//! `cluster="k8s-a"`, the label Thanos, Mimir and Alertmanager routes use
//! to tell Kubernetes clusters apart. Prometheus adds an external label
//! only to series and alerts that lack it, so the agent's own must never
//! carry `cluster`. Debian's Prometheus scrapes a real agent; its
//! federation endpoint shows what leaves it, and Debian's Alertmanager
//! routes by `cluster` both the alerts the agent pushes (under
//! `alerting.external_labels`) and those the rules decide.

mod common;

use std::time::Duration;

use common::program::{Program, mixin_rules, prometheus_labelled};
use common::receiver::Receiver;
use common::*;

const T: Duration = Duration::from_secs(90);
const NO_MASTER: &str = "ZooKeeperElectionNoMaster";

/// Alertmanager routing `cluster="k8s-a"` to `a` and everything else to
/// `other`, at once and every second.
fn routed_alertmanager(a: &Receiver, other: &Receiver) -> Program {
    let hook = |r: &Receiver| {
        format!(
            "    webhook_configs:\n      - url: http://127.0.0.1:{}/\n        send_resolved: true\n",
            r.port
        )
    };
    let config = format!(
        "route:\n  receiver: other\n  group_by: [alertname, cluster, ensemble, election]\n  group_wait: 0s\n  group_interval: 1s\n  repeat_interval: 1h\n\
         \x20 routes:\n    - matchers: ['cluster=\"k8s-a\"']\n      receiver: k8s-a\n\
         receivers:\n  - name: k8s-a\n{}  - name: other\n{}",
        hook(a),
        hook(other)
    );
    Program::start("am-external-labels", |dir, port| {
        std::fs::write(dir.join("am.yml"), config).unwrap();
        format!(
            "prometheus-alertmanager --config.file={d}/am.yml --storage.path={d}/data --web.listen-address=127.0.0.1:{port} --cluster.listen-address=",
            d = dir.display()
        )
    })
}

/// The ensembles a receiver was notified of `NO_MASTER` for, each with
/// the `cluster` label it carried.
fn notified(receiver: &Receiver) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = receiver
        .all()
        .iter()
        .filter(|n| n["status"] == "firing")
        .flat_map(|n| n["alerts"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["labels"]["alertname"] == NO_MASTER)
        .map(|a| {
            let label = |k: &str| a["labels"][k].as_str().unwrap_or("").to_owned();
            (label("ensemble"), label("cluster"))
        })
        .collect();
    got.sort();
    got.dedup();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_labels_reach_every_series_and_route_every_alert() {
    let zk = shared_server();
    let (a, other) = (Receiver::start(), Receiver::start());
    let am = routed_alertmanager(&a, &other);
    let base = unique_path("external_labels");
    let admin = client(&zk.address()).await;
    // One masterless election per ensemble: `prod`'s agent pushes its
    // alert itself, `stage`'s leaves it to the rules.
    for ensemble in ["prod", "stage"] {
        mkdir(&admin, &format!("{base}/{ensemble}/bots/bot_1")).await;
    }
    let cluster = |ensemble: &str| {
        format!(
            "[[clusters]]\nname = \"{ensemble}\"\nservers = [\"{}\"]\n\
             [clusters.four_letter_words]\nenabled = false\n\
             [[clusters.elections]]\npath = \"{base}/{ensemble}/bots/*\"\n",
            zk.address()
        )
    };
    let pushing = Exporter::start(&format!(
        "[alerting]\nalertmanagers = [\"http://127.0.0.1:{}\"]\nno_master_for = \"1s\"\n\
         external_labels = {{ cluster = \"k8s-a\" }}\n{}",
        am.port,
        cluster("prod")
    ));
    let alone = Exporter::start(&cluster("stage"));
    let rules = mixin_rules("", "2s");
    let prom = prometheus_labelled(
        "prometheus-external-labels",
        &[&rules],
        "1s",
        am.port,
        &[pushing.port, alone.port],
        &[("cluster", "k8s-a")],
    );

    // What leaves this Prometheus (federation, remote write) carries its
    // external label on every series, the agent's own labels beside it.
    let federated = wait_for_async("both agents federated", T, || {
        let (status, body) = http_get(
            prom.port,
            "/federate?match[]=%7Bjob%3D%22zk-election-exporter%22%7D",
        )?;
        let samples: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
        let has = |needle: &str| samples.iter().any(|l| l.contains(needle));
        match status == 200
            && has("zookeeper_election_has_master{")
            && has("ensemble=\"prod\"")
            && has("ensemble=\"stage\"")
        {
            true => Ok(samples.iter().map(|l| l.to_string()).collect::<Vec<_>>()),
            false => Err(format!("{status}: {} samples", samples.len())),
        }
    })
    .await;
    let unlabelled: Vec<&String> = federated
        .iter()
        .filter(|l| !l.contains("cluster=\"k8s-a\""))
        .collect();
    assert!(
        unlabelled.is_empty(),
        "series without the external label: {unlabelled:?}"
    );
    assert!(federated.len() > 20, "{federated:?}");

    // Both alerts reach the k8s-a route, with the external label and the
    // ensemble; nothing falls through to the default route.
    let want = vec![
        ("prod".to_owned(), "k8s-a".to_owned()),
        ("stage".to_owned(), "k8s-a".to_owned()),
    ];
    wait_for_async("both alerts routed by cluster", T, || {
        let got = notified(&a);
        if got == want {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    assert!(
        other.all().is_empty(),
        "the default route got {:#?}",
        other.all()
    );
    // The prod alert is the agent's (the rules stay silent while it
    // pushes), the stage alert the rule's.
    let rule_alerts = common::program::query(
        &prom,
        &format!("ALERTS{{alertname=\"{NO_MASTER}\",alertstate=\"firing\"}}"),
    )
    .unwrap();
    let ensembles: Vec<&str> = rule_alerts
        .iter()
        .filter_map(|s| s["metric"]["ensemble"].as_str())
        .collect();
    assert_eq!(ensembles, ["stage"], "{rule_alerts:?}");
    drop(admin);
}
