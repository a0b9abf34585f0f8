//! Debian's Prometheus (and Alertmanager) run by a test: started on a
//! free port under the harness's watchdog, asked over their HTTP API.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

use super::{free_port, http_get, spawn_watched, temp_dir, wait_for};

const T: Duration = Duration::from_secs(90);

/// A program started under the test harness's watchdog.
pub struct Program {
    child: std::process::Child,
    pub port: u16,
    pub dir: std::path::PathBuf,
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

impl Program {
    pub fn start(tag: &str, command: impl FnOnce(&std::path::Path, u16) -> String) -> Self {
        let dir = temp_dir(tag);
        let port = free_port();
        let log = std::fs::File::create(dir.join("log")).unwrap();
        let child = spawn_watched(&command(&dir, port), log);
        let program = Self { child, port, dir };
        wait_for(tag, T, || match http_get(port, "/-/ready") {
            Ok((200, _)) => Ok(()),
            other => Err(format!("{other:?}: {}", program.log())),
        });
        program
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    pub fn get_json(&self, path: &str) -> Result<Value, String> {
        let (status, body) = http_get(self.port, path)?;
        if status != 200 {
            return Err(format!("{path}: {status} {body}"));
        }
        serde_json::from_str(&body).map_err(|e| format!("{path}: {e}: {body}"))
    }
}

pub fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs an instant query; Err for a query Prometheus rejects.
pub fn query(prometheus: &Program, expr: &str) -> Result<Vec<Value>, String> {
    let v = prometheus.get_json(&format!("/api/v1/query?query={}", url_encode(expr)))?;
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// Active alerts in Alertmanager named `name`, as their label maps.
/// Debian's Alertmanager with one receiver that discards (tests read its
/// API), grouping and notifying every second.
pub fn alertmanager(tag: &str) -> Program {
    alertmanager_with(tag, "")
}

/// [`alertmanager`] with `extra` appended to its configuration (the
/// shipped inhibit rules, say).
pub fn alertmanager_with(tag: &str, extra: &str) -> Program {
    Program::start(tag, |dir, port| {
        std::fs::write(
            dir.join("am.yml"),
            format!("route:\n  receiver: discard\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\nreceivers:\n  - name: discard\n{extra}"),
        )
        .unwrap();
        format!(
            "prometheus-alertmanager --config.file={d}/am.yml --storage.path={d}/data --web.listen-address=127.0.0.1:{port} --cluster.listen-address=",
            d = dir.display()
        )
    })
}

/// Debian's Prometheus scraping the agents on `targets` every `interval`
/// under the job name the shipped rules select (`zk-election-exporter`),
/// evaluating `rules` as often and sending alerts to the Alertmanager on
/// port `alertmanager`.
pub fn prometheus(
    tag: &str,
    rules: &str,
    interval: &str,
    alertmanager: u16,
    targets: &[u16],
) -> Program {
    prometheus_with(tag, &[rules], interval, alertmanager, targets)
}

/// [`prometheus`] with several rule files.
pub fn prometheus_with(
    tag: &str,
    rules: &[&str],
    interval: &str,
    alertmanager: u16,
    targets: &[u16],
) -> Program {
    prometheus_labelled(tag, rules, interval, alertmanager, targets, &[])
}

/// [`prometheus_with`] under `global.external_labels`, as a Prometheus of
/// a multi-cluster setup runs.
pub fn prometheus_labelled(
    tag: &str,
    rules: &[&str],
    interval: &str,
    alertmanager: u16,
    targets: &[u16],
    external_labels: &[(&str, &str)],
) -> Program {
    let external: String = match external_labels {
        [] => String::new(),
        labels => format!(
            "  external_labels:\n{}",
            labels
                .iter()
                .map(|(k, v)| format!("    {k}: '{v}'\n"))
                .collect::<String>()
        ),
    };
    let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    Program::start(tag, |dir, port| {
        let mut files = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let name = format!("rules-{i}.yml");
            std::fs::write(dir.join(&name), r).unwrap();
            files.push(format!("  - {name}\n"));
        }
        std::fs::write(
            dir.join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n{external}rule_files:\n{}\
                 alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{alertmanager}']\n\
                 scrape_configs:\n  - job_name: zk-election-exporter\n    static_configs:\n      - targets: [{}]\n",
                files.concat(),
                targets.join(", ")
            ),
        )
        .unwrap();
        format!(
            "prometheus --config.file={d}/prometheus.yml --storage.tsdb.path={d}/data --web.listen-address=127.0.0.1:{port} --rules.alert.resend-delay=1s",
            d = dir.display()
        )
    })
}

pub fn alerts_in_alertmanager(am: &Program, name: &str) -> Result<Vec<Value>, String> {
    alerts_at(am.port, name)
}

/// Active alerts named `name` in the Alertmanager on `port`.
pub fn alerts_at(port: u16, name: &str) -> Result<Vec<Value>, String> {
    let (status, body) = http_get(
        port,
        "/api/v2/alerts?active=true&silenced=false&inhibited=false",
    )?;
    if status != 200 {
        return Err(format!("/api/v2/alerts: {status} {body}"));
    }
    let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    Ok(v.as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == name)
        .map(|a| a["labels"].clone())
        .collect())
}

/// The mixin's alert and recording rules (as JSON, which Prometheus reads
/// as YAML) with `_config` patched by `config` (jsonnet object fields) and
/// every alert's `for` set to `for_` where it has one: the shipped
/// expressions on a test's time scale.
pub fn mixin_rules(config: &str, for_: &str) -> String {
    let code = format!(
        "local m = (import 'mixin.libsonnet') + {{ _config+:: {{ {config} }} }} + {{ _config+:: {{ \
         alerts: std.mapWithKey(function(k, a) a + (if a['for'] != null then {{ 'for': '{for_}' }} else {{}}), super.alerts) }} }};\n\
         {{ groups: m.prometheusAlerts.groups + m.prometheusRules.groups }}"
    );
    let out = std::process::Command::new("jsonnet")
        .args(["-J", "mixin", "-e", &code])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("jsonnet (Debian package jsonnet) must be installed");
    assert!(
        out.status.success(),
        "jsonnet failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The mixin's migration records (`prometheusCompatRules`) with the
/// default `_config`, as JSON (which Prometheus reads as YAML).
pub fn compat_rules() -> String {
    let out = std::process::Command::new("jsonnet")
        .args([
            "-J",
            "mixin",
            "-e",
            "(import 'mixin.libsonnet').prometheusCompatRules",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("jsonnet (Debian package jsonnet) must be installed");
    assert!(
        out.status.success(),
        "jsonnet failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Alerts in Prometheus's `ALERTS` series with `state` (`firing`,
/// `pending`) over the last `range`, as "alertname{labels}" lines.
pub fn alerts_seen(
    prometheus: &Program,
    selector: &str,
    range: &str,
) -> Result<Vec<String>, String> {
    let found = query(
        prometheus,
        &format!("max_over_time(ALERTS{{{selector}}}[{range}])"),
    )?;
    Ok(found
        .iter()
        .map(|s| {
            let m = s["metric"].as_object().cloned().unwrap_or_default();
            let name = m
                .get("alertname")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let labels: Vec<String> = m
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "alertname" | "__name__"))
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            format!("{name}{{{}}}", labels.join(","))
        })
        .collect())
}
