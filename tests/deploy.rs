//! Deployment files: the Kubernetes manifests are schema-valid (PyPI's
//! kubernetes-validate) and agree with each other and with the agent, the
//! systemd unit passes `systemd-analyze verify` and its sandbox scores, the
//! Dockerfile's dependency stage knows every bench target.

use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BIN: &str = env!("CARGO_BIN_EXE_zk-election-exporter");
const K8S: &str = "deploy/kubernetes";

fn read(relative: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(relative))
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn yaml(relative: &str) -> Yaml {
    YamlLoader::load_from_str(&read(relative))
        .unwrap()
        .remove(0)
}

fn temp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zkee-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// kubernetes-validate from PATH or beside the Python interpreter (where
/// `pip install` puts it; scripts/test.sh installs it).
fn kubernetes_validate() -> PathBuf {
    if let Ok(path) = std::env::var("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("kubernetes-validate");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    let prefix = Command::new("python3")
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .expect("python3");
    let candidate = PathBuf::from(String::from_utf8(prefix.stdout).unwrap().trim())
        .join("bin/kubernetes-validate");
    assert!(
        candidate.is_file(),
        "kubernetes-validate is missing: python3 -m pip install kubernetes-validate (scripts/test.sh does)"
    );
    candidate
}

fn validate(file: &Path) -> (bool, String) {
    let out = Command::new(kubernetes_validate())
        .args(["--strict", "--no-warn"])
        .arg(file)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The files kustomization.yaml applies.
fn resources() -> Vec<String> {
    yaml(&format!("{K8S}/kustomization.yaml"))["resources"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn core_kinds_are_schema_valid() {
    let mut checked = 0;
    for file in resources()
        .into_iter()
        .chain(["secret.example.yaml".to_owned()])
    {
        let doc = yaml(&format!("{K8S}/{file}"));
        let kind = doc["kind"].as_str().unwrap().to_owned();
        if doc["apiVersion"]
            .as_str()
            .unwrap()
            .starts_with("monitoring.coreos.com/")
        {
            continue; // Operator CRDs: checked for consistency below.
        }
        let (ok, text) = validate(&Path::new(ROOT).join(K8S).join(&file));
        assert!(ok, "{file} ({kind}) is not schema-valid:\n{text}");
        checked += 1;
    }
    assert_eq!(checked, 4, "ConfigMap, Deployment, Service, Secret");
    // The validator does reject what a typo makes of a manifest.
    let dir = temp("k8s-typo");
    let typo = read(&format!("{K8S}/deployment.yaml")).replace("  replicas: 2", "  replica: 2");
    std::fs::write(dir.join("typo.yaml"), typo).unwrap();
    let (ok, text) = validate(&dir.join("typo.yaml"));
    std::fs::remove_dir_all(&dir).ok();
    assert!(!ok, "a misspelled field passed:\n{text}");
}

#[test]
fn kustomization_applies_every_manifest() {
    let listed = resources();
    let mut present: Vec<String> = std::fs::read_dir(Path::new(ROOT).join(K8S))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.ends_with(".yaml") && n != "kustomization.yaml" && !n.ends_with(".example.yaml")
        })
        .collect();
    present.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, present);
}

/// The Deployment is hardened as the issue asks, and its pieces fit: ports,
/// probes, the ConfigMap's file (which `check-config` accepts), the Service
/// and the ServiceMonitor.
#[test]
fn manifests_are_hardened_and_fit_together() {
    let deployment = yaml(&format!("{K8S}/deployment.yaml"));
    let spec = &deployment["spec"]["template"]["spec"];
    assert_eq!(deployment["spec"]["replicas"].as_i64(), Some(2));
    assert_eq!(spec["enableServiceLinks"].as_bool(), Some(false));
    assert_eq!(
        spec["securityContext"]["runAsNonRoot"].as_bool(),
        Some(true)
    );
    let container = &spec["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"].as_bool(), Some(true));
    assert_eq!(security["allowPrivilegeEscalation"].as_bool(), Some(false));
    assert_eq!(security["capabilities"]["drop"][0].as_str(), Some("ALL"));
    assert!(
        container["resources"]["requests"]["memory"]
            .as_str()
            .is_some()
    );
    assert!(
        container["resources"]["limits"]["memory"]
            .as_str()
            .is_some()
    );
    assert_eq!(container["ports"][0]["name"].as_str(), Some("http"));
    assert_eq!(container["ports"][0]["containerPort"].as_i64(), Some(9141));
    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/ready")] {
        assert_eq!(container[probe]["httpGet"]["path"].as_str(), Some(path));
        assert_eq!(container[probe]["httpGet"]["port"].as_str(), Some("http"));
    }

    // --config names the ConfigMap's key under the config volume's mount.
    let config_arg = container["args"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str()?.strip_prefix("--config="))
        .next()
        .expect("--config=")
        .to_owned();
    let mount = container["volumeMounts"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|m| m["name"].as_str() == Some("config"))
        .unwrap()["mountPath"]
        .as_str()
        .unwrap()
        .to_owned();
    let configmap = yaml(&format!("{K8S}/configmap.yaml"));
    let key = config_arg
        .strip_prefix(&format!("{mount}/"))
        .expect("under the mount");
    let toml = configmap["data"][key]
        .as_str()
        .expect("the ConfigMap has the file");
    let dir = temp("k8s-config");
    std::fs::write(dir.join("config.toml"), toml).unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(dir.join("config.toml"))
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "the ConfigMap's config.toml: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("listen_address = \"0.0.0.0:9141\""));

    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let service = yaml(&format!("{K8S}/service.yaml"));
    assert_eq!(&service["spec"]["selector"], pod_labels);
    assert_eq!(
        service["spec"]["publishNotReadyAddresses"].as_bool(),
        Some(true)
    );
    assert_eq!(
        service["spec"]["ports"][0]["targetPort"].as_str(),
        Some("http")
    );
    let monitor = yaml(&format!("{K8S}/servicemonitor.yaml"));
    assert_eq!(monitor["kind"].as_str(), Some("ServiceMonitor"));
    let wanted = &monitor["spec"]["selector"]["matchLabels"];
    for (k, v) in wanted.as_hash().unwrap() {
        assert_eq!(&service["metadata"]["labels"][k.as_str().unwrap()], v);
    }
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    assert_eq!(
        monitor["spec"]["endpoints"][0]["path"].as_str(),
        Some("/metrics")
    );
    // The mixin's default selector is job="zk-election-exporter": the job
    // label of a ServiceMonitor target is the Service's name.
    assert_eq!(
        service["metadata"]["name"].as_str(),
        Some("zk-election-exporter")
    );
}

fn systemd_analyze(args: &[&str], unit: &Path) -> (bool, String) {
    let out = Command::new("systemd-analyze")
        .args(args)
        .arg(unit)
        .output()
        .expect("systemd-analyze (Debian package systemd) must be installed");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The unit, with ExecStart pointing at this build's binary (verify checks
/// that the program exists).
fn unit_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let unit = read("deploy/systemd/zk-election-exporter.service")
        .replace("/usr/local/bin/zk-election-exporter", BIN);
    let path = dir.join("zk-election-exporter.service");
    std::fs::write(&path, edit(unit)).unwrap();
    path
}

#[test]
fn systemd_unit_verifies_and_is_sandboxed() {
    let unit = read("deploy/systemd/zk-election-exporter.service");
    for line in [
        "DynamicUser=yes",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "EnvironmentFile=-/etc/default/zk-election-exporter",
    ] {
        assert!(unit.lines().any(|l| l == line), "missing {line}");
    }
    let dir = temp("systemd");
    let path = unit_copy(&dir, |u| u);
    let (ok, text) = systemd_analyze(&["verify"], &path);
    // verify exits 0 on unknown keys; it must not say anything at all.
    assert!(
        ok && text.trim().is_empty(),
        "systemd-analyze verify:\n{text}"
    );
    // Exposure 2.0 of 10 at most ("OK"): the sandbox is real.
    let (ok, text) = systemd_analyze(&["security", "--offline=true", "--threshold=20"], &path);
    assert!(ok, "systemd-analyze security:\n{text}");
    // A typo is caught: the check can fail.
    let typo = unit_copy(&dir, |u| {
        u.replace("ProtectSystem=strict", "ProtectSytem=strict")
    });
    let (_, text) = systemd_analyze(&["verify"], &typo);
    std::fs::remove_dir_all(&dir).ok();
    assert!(text.contains("ProtectSytem"), "{text}");
}

/// The Dockerfile builds dependencies with placeholder sources first: every
/// `[[bench]]` of Cargo.toml needs its placeholder or that stage fails.
#[test]
fn dockerfile_dependency_stage_knows_every_bench() {
    let manifest = read("Cargo.toml");
    let dockerfile = read("Dockerfile");
    let mut in_bench = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            in_bench = line == "[[bench]]";
        } else if let (true, Some(name)) = (in_bench, line.strip_prefix("name = ")) {
            let file = format!("benches/{}.rs", name.trim_matches('"'));
            assert!(
                dockerfile.contains(&file),
                "Dockerfile does not create {file}"
            );
        }
    }
}

/// Every variable the systemd env file sets, and every commented example of
/// one, is something the agent takes without a warning: `ZK_EXPORTER_ARGS`
/// once made it warn "ignoring ZK_EXPORTER_* variables" at every start.
#[test]
fn the_env_file_sets_nothing_the_agent_warns_about() {
    let file = read("deploy/systemd/zk-election-exporter.env");
    let vars: Vec<(String, String)> = file
        .lines()
        .map(|l| l.trim_start_matches('#'))
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
        .collect();
    assert!(vars.iter().any(|(k, _)| k == "ARGS"), "{vars:?}");
    assert!(
        vars.iter().any(|(k, _)| k.starts_with("ZK_EXPORTER_")),
        "{vars:?}"
    );
    let out = Command::new(BIN)
        .args(["check-config", "--zk", "127.0.0.1:2181"])
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("WARN"), "{text}");
    assert!(
        text.contains("127.0.0.1:9141"),
        "the example key took effect: {text}"
    );
    // The check can fail: the old name warns.
    let old = Command::new(BIN)
        .args(["check-config", "--zk", "127.0.0.1:2181"])
        .env_clear()
        .env("ZK_EXPORTER_ARGS", "")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&old.stderr).contains("ignoring ZK_EXPORTER_*"));
}

/// `kubectl kustomize` of `dir` (relative to the repository), as documents.
fn kustomize(dir: &str) -> Vec<Yaml> {
    let out = Command::new("kubectl")
        .args(["kustomize", dir])
        .current_dir(ROOT)
        .output()
        .expect("kubectl (with kustomize) must be installed");
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    YamlLoader::load_from_str(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// kube-prometheus-stack selects ServiceMonitors and PrometheusRules by
/// its `release` label: the overlay adds it to those two and nothing else
/// (selectors stay as they are), and the image is named in one place, the
/// base's `images:`, which every container of the build uses.
#[test]
fn the_kube_prometheus_stack_overlay_labels_what_it_selects() {
    let docs = kustomize("deploy/kube-prometheus-stack");
    let mut labelled = Vec::new();
    for doc in &docs {
        let kind = doc["kind"].as_str().unwrap().to_owned();
        let release = doc["metadata"]["labels"]["release"].as_str();
        match kind.as_str() {
            "ServiceMonitor" | "PrometheusRule" => {
                assert_eq!(release, Some("kube-prometheus-stack"), "{kind}");
                labelled.push(kind);
            }
            _ => assert_eq!(release, None, "{kind} gets no release label"),
        }
    }
    labelled.sort();
    assert_eq!(labelled, ["PrometheusRule", "ServiceMonitor"]);
    // The base alone has no such label: the overlay is what adds it.
    let base = kustomize("deploy/kubernetes");
    assert!(
        base.iter()
            .all(|d| d["metadata"]["labels"]["release"].is_badvalue()),
        "the base carries no release label"
    );

    let kustomization = yaml(&format!("{K8S}/kustomization.yaml"));
    let entry = &kustomization["images"][0];
    let want = format!(
        "{}:{}",
        entry["newName"].as_str().unwrap(),
        entry["newTag"].as_str().unwrap()
    );
    let images: Vec<String> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some("Deployment"))
        .flat_map(|d| {
            d["spec"]["template"]["spec"]["containers"]
                .as_vec()
                .unwrap()
                .iter()
                .map(|c| c["image"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        images,
        [want],
        "one image, from kustomization.yaml's images"
    );
}

/// The kube-prometheus-stack overlay ships every dashboard as a ConfigMap
/// the Grafana sidecar loads (the `grafana_dashboard: "1"` label, in the
/// base's namespace), each holding exactly the committed dashboard.
#[test]
fn the_kube_prometheus_stack_overlay_ships_the_dashboards_for_the_sidecar() {
    let docs = kustomize("deploy/kube-prometheus-stack");
    let mut shipped = Vec::new();
    for doc in docs.iter().filter(|d| {
        d["metadata"]["labels"]["grafana_dashboard"]
            .as_str()
            .is_some()
    }) {
        assert_eq!(doc["kind"].as_str(), Some("ConfigMap"));
        assert_eq!(
            doc["metadata"]["labels"]["grafana_dashboard"].as_str(),
            Some("1")
        );
        assert_eq!(doc["metadata"]["namespace"].as_str(), Some("monitoring"));
        let data = doc["data"].as_hash().unwrap();
        assert_eq!(data.len(), 1, "one dashboard per ConfigMap");
        let (file, json) = data.iter().next().unwrap();
        let file = file.as_str().unwrap().to_owned();
        let committed: serde_json::Value =
            serde_json::from_str(&read(&format!("dashboards/{file}"))).unwrap();
        let inside: serde_json::Value = serde_json::from_str(json.as_str().unwrap()).unwrap();
        assert_eq!(inside, committed, "{file}: the committed dashboard");
        shipped.push(file);
    }
    shipped.sort();
    let mut committed: Vec<String> = std::fs::read_dir(format!("{ROOT}/dashboards"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    committed.sort();
    assert_eq!(shipped, committed, "every dashboard, once");
}

/// The compatibility records are an optional component: an overlay that
/// adds it before kube-prometheus-stack's gets a second PrometheusRule,
/// labelled for the chart's Prometheus, with exactly the groups of
/// alerts/compat.rules.yml; the shipped overlays do not carry it.
#[test]
fn the_compatibility_records_are_an_optional_component() {
    let dir = temp("compat-overlay");
    // kustomize takes only relative paths to other kustomizations.
    let up = "../".repeat(dir.components().count() - 1);
    let root = format!("{up}{}", ROOT.trim_start_matches('/'));
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {root}/{K8S}\n\
             components:\n  - {root}/deploy/components/compat-rules\n  - {root}/deploy/components/kube-prometheus-stack\n"
        ),
    )
    .unwrap();
    let docs = kustomize(dir.to_str().unwrap());
    let rules: Vec<&Yaml> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some("PrometheusRule"))
        .collect();
    assert_eq!(
        rules.len(),
        2,
        "the agent's rules and the compatibility records"
    );
    for rule in &rules {
        assert_eq!(
            rule["metadata"]["labels"]["release"].as_str(),
            Some("kube-prometheus-stack")
        );
    }
    let compat = rules
        .iter()
        .find(|r| r["metadata"]["name"].as_str() == Some("zk-election-exporter-compat"))
        .expect("the compat PrometheusRule");
    // (group, record, expr) in order: kustomize reorders a mapping's keys.
    let records = |groups: &Yaml| -> Vec<(String, String, String)> {
        let text = |y: &Yaml| y.as_str().unwrap_or_default().to_owned();
        groups
            .as_vec()
            .unwrap()
            .iter()
            .flat_map(|g| {
                g["rules"]
                    .as_vec()
                    .unwrap()
                    .iter()
                    .map(|r| (text(&g["name"]), text(&r["record"]), text(&r["expr"])))
            })
            .collect()
    };
    let (shipped, file) = (
        records(&compat["spec"]["groups"]),
        records(&yaml("alerts/compat.rules.yml")["groups"]),
    );
    assert!(file.len() > 50, "{} records", file.len());
    assert!(
        shipped == file,
        "the component's records differ from alerts/compat.rules.yml"
    );
    for shipped in ["deploy/kubernetes", "deploy/kube-prometheus-stack"] {
        let count = kustomize(shipped)
            .iter()
            .filter(|d| d["kind"].as_str() == Some("PrometheusRule"))
            .count();
        assert_eq!(count, 1, "{shipped}: the compatibility records are opt-in");
    }
    let _ = std::fs::remove_dir_all(dir);
}
