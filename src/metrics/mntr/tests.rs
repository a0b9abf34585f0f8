use super::*;
use crate::fourlw::parse::parse_mntr;

/// A reply's typing with its values.
struct Typed(Mapped, Vec<f64>);

impl std::ops::Deref for Typed {
    type Target = Mapped;
    fn deref(&self) -> &Mapped {
        &self.0
    }
}

fn mapped(text: &str) -> Typed {
    let mntr = parse_mntr(text).unwrap();
    Typed(map_mntr(&mntr), mntr.values().to_vec())
}

/// A sample with its value in place of its index.
fn sample(m: &Typed, name: &str) -> Option<Sample> {
    m.samples
        .iter()
        .find(|s| s.name == name && s.set_key.is_none())
        .cloned()
        .map(|s| Sample {
            value: s.value,
            ..s
        })
}

fn value(m: &Typed, name: &str) -> f64 {
    m.1[sample(m, name).unwrap().value]
}

#[test]
fn names_are_prefixed_by_whole_words_with_the_old_names_as_aliases() {
    let m = mapped(
        "zk_uptime\t649\nzk_avg_updatelatency\t2\nzk_min_updatelatency\t1\nzk_max_updatelatency\t3\n\
         zk_cnt_updatelatency\t4\nzk_sum_updatelatency\t8\nzk_avg_election_time\t1\nzk_min_election_time\t1\n\
         zk_max_election_time\t1\nzk_cnt_election_time\t1\nzk_sum_election_time\t1\n",
    );
    assert_eq!(value(&m, "zookeeper_uptime"), 649.0);
    assert_eq!(value(&m, "zookeeper_mntr_uptime"), 649.0, "alias kept");
    assert_eq!(value(&m, "zookeeper_updatelatency_max"), 3.0);
    assert_eq!(value(&m, "zookeeper_mntr_updatelatency_max"), 3.0);
    let summaries: Vec<&str> = m.summaries.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        summaries,
        [
            "zookeeper_mntr_election_time",
            "zookeeper_updatelatency",
            "zookeeper_mntr_updatelatency"
        ],
        "election_time lies in zookeeper_election_: prefixed, no alias"
    );
    assert!(
        sample(&m, "zookeeper_mntr_uptime")
            .unwrap()
            .source
            .contains("deprecated name of zookeeper_uptime")
    );
    assert_eq!(m.dropped, 0);
}

#[test]
fn a_typing_is_reused_for_the_same_key_set_only() {
    let mut typings = Typings::default();
    let a = parse_mntr("zk_znode_count\t5\nzk_packets_sent\t1\n").unwrap();
    let b = parse_mntr("zk_znode_count\t9\nzk_packets_sent\t4\n").unwrap();
    let c = parse_mntr("zk_znode_count\t9\n").unwrap();
    let (ta, tb, tc) = (typings.of(&a), typings.of(&b), typings.of(&c));
    assert!(std::sync::Arc::ptr_eq(&ta, &tb), "same keys, new values");
    assert!(!std::sync::Arc::ptr_eq(&ta, &tc));
    assert_eq!(tc.samples.len(), 1);
    assert_eq!(b.values()[tb.samples[0].value], 9.0);
}

#[test]
fn counters_gauges_and_legacy_latency() {
    let m = mapped(
        "zk_packets_received\t10\nzk_znode_count\t5\nzk_avg_latency\t0.5\nzk_min_latency\t0\nzk_max_latency\t7\nzk_max_file_descriptor_count\t1024\nzk_brand_new_key\t3\n",
    );
    assert_eq!(
        sample(&m, "zookeeper_packets_received").unwrap().kind,
        Kind::Counter
    );
    assert_eq!(
        sample(&m, "zookeeper_znode_count").unwrap().kind,
        Kind::Gauge
    );
    assert_eq!(value(&m, "zookeeper_latency_avg"), 0.5);
    assert_eq!(value(&m, "zookeeper_latency_max"), 7.0);
    assert_eq!(value(&m, "zookeeper_max_file_descriptor_count"), 1024.0);
    assert_eq!(
        sample(&m, "zookeeper_brand_new_key").unwrap().kind,
        Kind::Gauge
    );
    assert!(m.summaries.is_empty());
}

#[test]
fn summaries_fold_with_quantiles_and_sets_get_a_key() {
    let m = mapped(
        "zk_avg_readlatency\t1.5\nzk_min_readlatency\t1\nzk_max_readlatency\t9\nzk_cnt_readlatency\t4\nzk_sum_readlatency\t6\nzk_p50_readlatency\t1\nzk_p99_readlatency\t9\n\
         zk_avg_1_learner_handler_qp_size\t0.3\nzk_cnt_1_learner_handler_qp_size\t8\nzk_sum_1_learner_handler_qp_size\t3\n\
         zk_cnt_quorum_ack_latency\t2\nzk_sum_quorum_ack_latency\t2\n\
         zk_cnt_zookeeper_write_per_namespace\t1\nzk_sum_zookeeper_write_per_namespace\t155\n",
    );
    let read = m
        .summaries
        .iter()
        .find(|s| s.name == "zookeeper_readlatency")
        .unwrap();
    assert_eq!((m.1[read.count], m.1[read.sum]), (4.0, 6.0));
    let quantiles: Vec<(f64, f64)> = read.quantiles.iter().map(|(q, i)| (*q, m.1[*i])).collect();
    assert_eq!(quantiles, vec![(0.5, 1.0), (0.99, 9.0)]);
    assert!(
        sample(&m, "zookeeper_readlatency_avg").is_none(),
        "avg is sum/count of the summary"
    );
    assert_eq!(value(&m, "zookeeper_readlatency_max"), 9.0);
    let qp = m
        .summaries
        .iter()
        .find(|s| s.name == "zookeeper_learner_handler_qp_size")
        .unwrap();
    assert_eq!(qp.set_key.as_deref(), Some("1"));
    assert!(
        m.summaries
            .iter()
            .any(|s| s.name == "zookeeper_quorum_ack_latency" && s.set_key.is_none())
    );
    let ns = m
        .summaries
        .iter()
        .find(|s| s.name == "zookeeper_write_per_namespace")
        .unwrap();
    assert_eq!(ns.set_key.as_deref(), Some("zookeeper"));
}

#[test]
fn reserved_names_and_duplicates() {
    let m = mapped("zk_up\t1\nzk_server_leader\t1\nzk_packets_sent\t1\nzk_packets_sent_total\t2\n");
    assert!(sample(&m, "zookeeper_mntr_up").is_some());
    assert!(sample(&m, "zookeeper_mntr_server_leader").is_some());
    assert!(sample(&m, "zookeeper_packets_sent").is_some());
    assert_eq!(
        m.dropped, 1,
        "zk_packets_sent_total would expose the same name as the counter"
    );
}

#[test]
fn every_real_key_is_mapped_once() {
    for role in ["leader", "follower", "standalone"] {
        let text = std::fs::read_to_string(format!(
            "{}/tests/fixtures/3.8.0/{role}/mntr.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let m = mapped(&text);
        assert_eq!(m.dropped, 0, "{role}");
        assert!(m.summaries.len() > 20, "{role}");
        let names: BTreeSet<_> = m.samples.iter().map(|s| (&s.name, &s.set_key)).collect();
        assert_eq!(names.len(), m.samples.len(), "{role}: unique names");
    }
}
