//! The monitoring mixin (mixin/, Debian's jsonnet) is the source of the alert
//! rules, the recording rules, the dashboards and the PrometheusRule: the
//! committed files are exactly its output, and `_config` really tunes them.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs jsonnet with the mixin on the library path; its standard output.
fn jsonnet(args: &[&str]) -> String {
    let out = Command::new("jsonnet")
        .args(["-J", "mixin"])
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("jsonnet (Debian package jsonnet) must be installed");
    assert!(
        out.status.success(),
        "jsonnet {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The mixin with `_config` overridden by `patch` (jsonnet object fields).
fn mixin_with(patch: &str, field: &str) -> Value {
    let code = format!("((import 'mixin.libsonnet') + {{ _config+:: {{ {patch} }} }}).{field}");
    serde_json::from_str(&jsonnet(&["-e", &code])).unwrap()
}

#[test]
fn committed_files_are_the_mixins_output() {
    let dir = std::env::temp_dir().join(format!("zkee-mixin-{}", std::process::id()));
    // jsonnet -m writes into folders that exist: make each file's.
    let files: Vec<String> = serde_json::from_str(&jsonnet(&[
        "-e",
        "std.objectFields(import 'mixin/generate.jsonnet')",
    ]))
    .unwrap();
    for file in &files {
        std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
    }
    let listed = jsonnet(&["-S", "-m", dir.to_str().unwrap(), "mixin/generate.jsonnet"]);
    let mut names = BTreeSet::new();
    let mut stale = Vec::new();
    for path in listed.lines() {
        let relative = Path::new(path).strip_prefix(&dir).unwrap();
        names.insert(relative.to_str().unwrap().to_owned());
        let fresh = std::fs::read(path).unwrap();
        let committed = std::fs::read(Path::new(ROOT).join(relative)).unwrap_or_default();
        if fresh != committed {
            stale.push(relative.display().to_string());
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        stale.is_empty(),
        "differ from a fresh generation (run scripts/generate.sh): {stale:?}"
    );
    let expected: BTreeSet<String> = [
        "alerts/compat.rules.yml",
        "alerts/inhibit_rules.yml",
        "alerts/zookeeper.rules.yml",
        "dashboards/zookeeper-elections.json",
        "dashboards/zookeeper-ensemble.json",
        "dashboards/zookeeper-registry.json",
        "deploy/alertmanager.yml",
        "deploy/components/compat-rules/prometheusrule.yaml",
        "deploy/components/kube-prometheus-stack/dashboards.yaml",
        "deploy/kubernetes/prometheusrule.yaml",
        "src/model/alerting/catalogue.rs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(names, expected);
}

/// A scrape job named otherwise gets a working ZooKeeperExporterDown from
/// `_config.selector` alone, checked by promtool on the generated rules.
#[test]
fn another_job_name_needs_only_the_selector() {
    let alerts = mixin_with("selector: 'job=\"zk\"'", "prometheusAlerts");
    let dir = std::env::temp_dir().join(format!("zkee-selector-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // JSON is YAML: promtool reads the mixin's output as it is.
    std::fs::write(dir.join("rules.json"), alerts.to_string()).unwrap();
    let case = |name: &str, up: &str, expected: &str| {
        format!(
            "  - name: \"{name}\"\n    interval: 1m\n    input_series:\n{up}    alert_rule_test:\n      \
             - eval_time: 5m\n        alertname: ZooKeeperExporterDown\n        exp_alerts:{expected}\n"
        )
    };
    let tests = format!(
        "rule_files:\n  - rules.json\nevaluation_interval: 15s\ntests:\n{}{}{}",
        case(
            "a down target of job zk pages",
            "      - series: 'up{job=\"zk\",instance=\"a:9141\"}'\n        values: '0x10'\n",
            "\n          - exp_labels:\n              severity: critical\n              job: zk\n            \
             exp_annotations:\n              \
             summary: \"zk-election-exporter is down\"\n              \
             description: \"Prometheus has scraped no replica of zk for 2 minutes: no election or ensemble metrics, and no alert of the agent's own.\"\n              \
             runbook_url: \"https://github.com/zk-election-exporter/zk-election-exporter/blob/main/docs/runbooks.md#zookeeperexporterdown\"",
        ),
        case(
            "a healthy target of job zk is quiet",
            "      - series: 'up{job=\"zk\",instance=\"a:9141\"}'\n        values: '1x10'\n",
            " []",
        ),
        case(
            "job zk gone entirely pages",
            "      - series: 'up{job=\"other\",instance=\"b:1\"}'\n        values: '1x10'\n",
            "\n          - exp_labels:\n              severity: critical\n              job: zk\n            \
             exp_annotations:\n              summary: \"zk-election-exporter is down\"\n              \
             description: \"Prometheus has scraped no replica of zk for 2 minutes: no election or ensemble metrics, and no alert of the agent's own.\"\n              \
             runbook_url: \"https://github.com/zk-election-exporter/zk-election-exporter/blob/main/docs/runbooks.md#zookeeperexporterdown\"",
        ),
    );
    std::fs::write(dir.join("tests.yml"), tests).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules", "tests.yml"])
        .current_dir(&dir)
        .output()
        .expect("promtool (Debian package prometheus) must be installed");
    std::fs::remove_dir_all(&dir).ok();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");

    // Every expression of every alert uses the selector; none the default job.
    for group in alerts["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            let expr = rule["expr"].as_str().unwrap();
            assert!(expr.contains("job=\"zk\""), "{}: {expr}", rule["alert"]);
            assert!(!expr.contains("zk-election-exporter"), "{expr}");
        }
    }
}

/// Thresholds, `for:` and the runbook URL come from `_config`, and the alert
/// text follows them.
#[test]
fn config_tunes_thresholds_durations_and_runbooks() {
    let alerts = mixin_with(
        "runbookURL: 'https://wiki.example/zk', alerts+: { ZooKeeperHighLatency+: { 'for': '10m', latencyMs: 250 }, \
         ZooKeeperElectionMasterFlapping+: { switches: 6, window: '30m' } }",
        "prometheusAlerts",
    );
    let rule = |name: &str| -> Value {
        alerts["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().iter())
            .find(|r| r["alert"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .clone()
    };
    let latency = rule("ZooKeeperHighLatency");
    assert!(
        latency["expr"].as_str().unwrap().ends_with("> 250"),
        "{latency}"
    );
    assert_eq!(latency["for"], "10m");
    let text = latency["annotations"]["description"].as_str().unwrap();
    assert!(text.contains("over 250 ms for 10 minutes"), "{text}");
    assert_eq!(
        latency["annotations"]["runbook_url"],
        "https://wiki.example/zk#zookeeperhighlatency"
    );
    let flapping = rule("ZooKeeperElectionMasterFlapping");
    let expr = flapping["expr"].as_str().unwrap();
    assert!(expr.contains("[30m])) >= 6"), "{expr}");
    let text = flapping["annotations"]["description"].as_str().unwrap();
    assert!(text.contains("more than 5 times in 30 minutes"), "{text}");
}

/// Dashboards: every query is scoped by the selector (its `job` matcher
/// turned into the `job` variable, its other matchers as they are) or
/// reads a recorded series, and each recorded series they read is
/// recorded by the mixin.
#[test]
fn dashboards_use_the_selector_and_existing_records() {
    let selector = "selector: 'job=\"zk\",namespace=\"ns\"'";
    let dashboards = mixin_with(selector, "grafanaDashboards");
    let rules = mixin_with(selector, "prometheusRules");
    let recorded: Vec<&str> = rules["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().iter())
        .map(|r| r["record"].as_str().unwrap())
        .collect();
    assert!(!recorded.is_empty());
    let mut uses = BTreeSet::new();
    for (file, d) in dashboards.as_object().unwrap() {
        let mut exprs: Vec<String> = d["panels"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["targets"].as_array().into_iter().flatten())
            .map(|t| t["expr"].as_str().unwrap().to_owned())
            .collect();
        let variables = d["templating"]["list"].as_array().unwrap();
        let names: Vec<&str> = variables
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert_eq!(names[..3], ["datasource", "job", "ensemble"], "{file}");
        for v in variables {
            if v["name"] == "job" {
                // The one query the job variable cannot scope: which jobs.
                assert_eq!(
                    v["definition"],
                    "label_values(zookeeper_exporter_build_info{namespace=\"ns\"}, job)",
                    "{file}"
                );
            } else if v["type"] == "query" {
                exprs.push(v["definition"].as_str().unwrap().to_owned());
            }
        }
        for a in d["annotations"]["list"].as_array().unwrap() {
            exprs.push(a["expr"].as_str().unwrap().to_owned());
        }
        for expr in exprs {
            let records: Vec<&str> = recorded
                .iter()
                .copied()
                .filter(|r| expr.contains(r))
                .collect();
            uses.extend(records.iter().map(|r| r.to_string()));
            assert!(
                expr.contains("job=~\"$job\",namespace=\"ns\"") || !records.is_empty(),
                "{file}: neither scoped nor recorded: {expr}"
            );
            assert!(!expr.contains("job=\"zk\""), "{file}: a fixed job: {expr}");
            assert!(!expr.contains("zk-election-exporter"), "{file}: {expr}");
        }
    }
    // The burn-rate alerts read the SLO windows the dashboards do not show.
    let rules = std::fs::read_to_string(format!("{ROOT}/alerts/zookeeper.rules.yml")).unwrap();
    for line in rules
        .lines()
        .filter(|l| l.trim_start().starts_with("expr: "))
    {
        uses.extend(
            recorded
                .iter()
                .filter(|r| line.contains(**r))
                .map(|r| r.to_string()),
        );
    }
    let unused: Vec<&&str> = recorded.iter().filter(|r| !uses.contains(**r)).collect();
    assert!(
        unused.is_empty(),
        "recorded but never read by a dashboard or an alert: {unused:?}"
    );
}

fn yaml_file(relative: &str) -> Yaml {
    let text = std::fs::read_to_string(Path::new(ROOT).join(relative)).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

/// The Prometheus Operator object carries exactly the rules file's groups.
#[test]
fn prometheusrule_groups_equal_the_rules_file() {
    let rules = yaml_file("alerts/zookeeper.rules.yml");
    let object = yaml_file("deploy/kubernetes/prometheusrule.yaml");
    assert_eq!(object["kind"].as_str(), Some("PrometheusRule"));
    assert_eq!(
        object["apiVersion"].as_str(),
        Some("monitoring.coreos.com/v1")
    );
    let groups = &rules["groups"];
    assert!(groups.as_vec().is_some_and(|g| g.len() >= 5), "{groups:?}");
    assert_eq!(&object["spec"]["groups"], groups);
}

/// The anchors GitHub gives the headings of a Markdown file: lower case,
/// spaces to dashes, punctuation other than `-` and `_` dropped.
fn anchors(markdown: &str) -> BTreeSet<String> {
    markdown
        .lines()
        .filter_map(|l| {
            l.strip_prefix('#')
                .map(|h| h.trim_start_matches('#').trim())
        })
        .map(|h| {
            h.chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => {
                        Some(c.to_ascii_lowercase())
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every alert of the committed rules links an absolute `https://` runbook
/// (a relative path reaches the pager unusable) whose anchor is a heading
/// of docs/runbooks.md.
#[test]
fn every_runbook_url_is_absolute_and_its_anchor_exists() {
    let runbooks = std::fs::read_to_string(Path::new(ROOT).join("docs/runbooks.md")).unwrap();
    let headings = anchors(&runbooks);
    let rules = yaml_file("alerts/zookeeper.rules.yml");
    let mut checked = 0;
    for group in rules["groups"].as_vec().unwrap() {
        for rule in group["rules"].as_vec().unwrap() {
            let Some(alert) = rule["alert"].as_str() else {
                continue;
            };
            let url = rule["annotations"]["runbook_url"].as_str().unwrap();
            let (base, anchor) = url
                .split_once('#')
                .unwrap_or_else(|| panic!("{alert}: {url} has no anchor"));
            assert!(
                base.starts_with("https://") && base.ends_with("/docs/runbooks.md"),
                "{alert}: {url} is not an absolute link to the runbooks"
            );
            assert!(
                headings.contains(anchor),
                "{alert}: docs/runbooks.md has no heading for #{anchor}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 36, "{checked} alerts");
}

/// The agent pushes its own copy of some alerts; both copies must link the
/// same runbook, so the agent's default is the mixin's.
#[test]
fn pushed_alerts_link_the_runbooks_the_rules_link() {
    let url = mixin_with("", "_config");
    assert_eq!(
        url["runbookURL"],
        zk_election_exporter::config::alerting::DEFAULT_RUNBOOK_URL,
        "[alerting] runbook_url's default differs from the mixin's _config.runbookURL"
    );
}

/// docs/dashboards.md's panel tables are rendered from the committed
/// dashboards, so the documented queries are the shipped ones
/// (`ZKEE_BLESS=1 cargo test --test mixin panel_tables` rewrites them).
#[test]
fn panel_tables_in_docs_are_the_dashboards() {
    let path = format!("{ROOT}/docs/dashboards.md");
    let mut docs = std::fs::read_to_string(&path).unwrap();
    let mut stale = Vec::new();
    for file in [
        "zookeeper-elections.json",
        "zookeeper-ensemble.json",
        "zookeeper-registry.json",
    ] {
        let begin = format!(
            "<!-- panels:{file}:begin (generated: ZKEE_BLESS=1 cargo test --test mixin panel_tables) -->\n"
        );
        let end = format!("<!-- panels:{file}:end -->");
        let (Some(b), Some(e)) = (docs.find(&begin), docs.find(&end)) else {
            panic!("docs/dashboards.md lacks the panel-table markers of {file}");
        };
        let d: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{ROOT}/dashboards/{file}")).unwrap(),
        )
        .unwrap();
        let fresh = panel_table(&d);
        if docs[b + begin.len()..e] != fresh {
            stale.push(file);
            docs.replace_range(b + begin.len()..e, &fresh);
        }
    }
    if std::env::var_os("ZKEE_BLESS").is_some() {
        std::fs::write(&path, docs).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/dashboards.md's panel tables of {stale:?} are stale: ZKEE_BLESS=1 cargo test --test mixin panel_tables"
    );
}

/// One row per panel: title, type, description, queries.
fn panel_table(d: &Value) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("| panel | type | shows | queries |\n| --- | --- | --- | --- |\n");
    for p in d["panels"].as_array().unwrap() {
        let title = cell(p["title"].as_str().unwrap_or_default());
        let kind = p["type"].as_str().unwrap_or_default();
        if kind == "row" {
            out.push_str(&format!("| **{title}** | row | | |\n"));
            continue;
        }
        let queries: Vec<String> = p["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| format!("`{}`", cell(t["expr"].as_str().unwrap_or_default())))
            .collect();
        out.push_str(&format!(
            "| {title} | {kind} | {} | {} |\n",
            cell(p["description"].as_str().unwrap_or_default()),
            queries.join("<br>")
        ));
    }
    out
}

/// Runs tests/grafana/check.mjs (the dashboards against @grafana/schema's
/// types, compiled by tsc) on `dashboards`; its output and whether it passed.
fn grafana_schema_check(dashboards: &Path) -> (bool, String) {
    let modules = Path::new(ROOT).join("tests/grafana/node_modules/@grafana/schema");
    assert!(
        modules.is_dir(),
        "{} is missing: npm ci --prefix tests/grafana (scripts/test.sh does)",
        modules.display()
    );
    let out = std::env::temp_dir().join(format!(
        "grafana-check-{}-{}",
        std::process::id(),
        dashboards.file_name().unwrap().to_string_lossy()
    ));
    let run = Command::new("node")
        .arg(format!("{ROOT}/tests/grafana/check.mjs"))
        .arg(&out)
        .arg(dashboards)
        .output()
        .expect("node (Node.js) must be installed");
    let _ = std::fs::remove_dir_all(&out);
    (
        run.status.success(),
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr),
    )
}

/// Every dashboard type-checks against @grafana/schema: the model, each
/// panel's options and field config, every override property. A copy with
/// a wrong cell display mode and a misspelled option fails, naming both:
/// the check can fail.
#[test]
fn dashboards_match_the_grafana_schema() {
    let (ok, text) = grafana_schema_check(&Path::new(ROOT).join("dashboards"));
    assert!(ok, "{text}");
    assert!(text.contains("3 dashboards match"), "{text}");

    let broken = std::env::temp_dir().join(format!("broken-dashboards-{}", std::process::id()));
    std::fs::create_dir_all(&broken).unwrap();
    let text =
        std::fs::read_to_string(format!("{ROOT}/dashboards/zookeeper-elections.json")).unwrap();
    let text = text
        .replacen("\"type\": \"color-text\"", "\"type\": \"colour-text\"", 1)
        .replacen("\"showHeader\": true", "\"showHedaer\": true", 1);
    std::fs::write(broken.join("zookeeper-elections.json"), text).unwrap();
    let (ok, text) = grafana_schema_check(&broken);
    let _ = std::fs::remove_dir_all(&broken);
    assert!(!ok, "{text}");
    assert!(
        text.contains("colour-text") && text.contains("showHedaer"),
        "{text}"
    );
}
