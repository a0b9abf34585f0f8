//! The Debian package, installed on a fresh Debian root as a user would:
//! `scripts/package-deb.sh` builds it, a bookworm root made by debootstrap
//! (`ensure_debian_base`, the image's base) runs in podman, apt installs
//! the package and what it depends on, and then: the system user exists,
//! the configuration is a conffile readable by the service only, the unit
//! passes `systemd-analyze verify` and is neither enabled nor started, and
//! the installed binary, run as the service user against a ZooKeeper on the
//! host, names an election's master in `/metrics`.

mod common;

use std::process::Command;
use std::time::Duration;

use common::podman::{Container, podman, text};
use common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BASE: &str = "debian:bookworm-slim";
const T: Duration = Duration::from_secs(120);

/// Runs a script of `scripts/lib.sh`'s functions from the repository root.
fn lib(script: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; source scripts/lib.sh; {script}"
        ))
        .current_dir(ROOT)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_package_installs_on_a_fresh_debian_root_and_its_service_user_runs_it() {
    let dist = temp_dir("package");
    let built = Command::new(format!("{ROOT}/scripts/package-deb.sh"))
        .arg(&dist)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "scripts/package-deb.sh: {}",
        text(&built)
    );
    let deb = String::from_utf8_lossy(&built.stdout).trim().to_owned();
    let file = std::path::Path::new(&deb)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        file,
        format!(
            "zk-election-exporter_{}_amd64.deb",
            env!("CARGO_PKG_VERSION")
        )
    );
    let base = lib(&format!("ensure_debian_base {BASE}"));
    assert!(base.status.success(), "ensure_debian_base: {}", text(&base));

    // A fresh root, the package and the test's configuration mounted.
    let name = format!("zkee-package-test-{}", std::process::id());
    let mount = format!("{}:/pkg:ro", dist.display());
    let run = podman(&[
        "run",
        "-d",
        "--name",
        &name,
        "--network",
        "host",
        "--ulimit",
        "nofile=4096:4096",
        "--ulimit",
        "nproc=4096:4096",
        "-v",
        &mount,
        BASE,
        "sleep",
        "infinity",
    ]);
    assert!(run.status.success(), "podman run: {}", text(&run));
    let _container = Container(name.clone());
    let exec = |script: &str| podman(&["exec", &name, "bash", "-c", script]);

    // As a user installs it: apt, with its dependencies; systemd for
    // systemd-analyze (a minbase root has none).
    let install = exec(&format!(
        "set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; \
         apt-get install -y -qq --no-install-recommends /pkg/{file} systemd 2>&1"
    ));
    assert!(
        install.status.success(),
        "apt-get install: {}",
        text(&install)
    );
    assert!(
        text(&install)
            .contains("name your ZooKeeper clusters in /etc/zk-election-exporter/config.toml"),
        "postinst says what to do: {}",
        text(&install)
    );

    let facts = exec(
        "id -u zk-election-exporter >/dev/null && echo user; \
         stat -c 'config %U:%G %a' /etc/zk-election-exporter/config.toml; \
         dpkg-query -W -f='${Conffiles}\n' zk-election-exporter; \
         ls /etc/systemd/system/multi-user.target.wants/ 2>/dev/null | grep -c zk-election-exporter || true; \
         grep -lx zk-election-exp /proc/[0-9]*/comm 2>/dev/null | wc -l",
    );
    let facts = text(&facts);
    assert!(facts.contains("user\n"), "the system user: {facts}");
    assert!(
        facts.contains("config root:zk-election-exporter 640"),
        "{facts}"
    );
    assert!(
        facts.contains("/etc/zk-election-exporter/config.toml ")
            && facts.contains("/etc/default/zk-election-exporter "),
        "conffiles: {facts}"
    );
    let counts: Vec<&str> = facts.lines().rev().take(2).collect();
    assert_eq!(counts, ["0", "0"], "neither enabled nor running: {facts}");

    let verify =
        exec("systemd-analyze verify /lib/systemd/system/zk-election-exporter.service 2>&1");
    assert!(
        verify.status.success() && text(&verify).trim().is_empty(),
        "systemd-analyze verify: {}",
        text(&verify)
    );

    // The package's configuration names no cluster: the agent refuses it
    // (exit 2, so that systemd does not restart it), as the unit runs it.
    let unconfigured = exec(
        "runuser -u zk-election-exporter -- /usr/bin/zk-election-exporter \
         --config=/etc/zk-election-exporter/config.toml 2>&1",
    );
    assert_eq!(
        unconfigured.status.code(),
        Some(2),
        "{}",
        text(&unconfigured)
    );
    assert!(
        text(&unconfigured).contains("no ZooKeeper cluster configured"),
        "{}",
        text(&unconfigured)
    );

    // Configured, and run as the service user: it names the master.
    let zk = shared_server();
    let election = format!("{}/bot_1", unique_path("package"));
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-from-deb").await;
    let port = free_port();
    let glob = election.rsplit_once('/').unwrap().0.to_owned() + "/*";
    let configure = exec(&format!(
        "printf '[web]\\nlisten_address = \"127.0.0.1:{port}\"\\n[[clusters]]\\nservers = [\"{}\"]\\n\
         [[clusters.elections]]\\npath = \"{glob}\"\\n' >/etc/zk-election-exporter/config.toml",
        zk.address()
    ));
    assert!(configure.status.success(), "{}", text(&configure));
    let start = podman(&[
        "exec",
        "-d",
        &name,
        "runuser",
        "-u",
        "zk-election-exporter",
        "--",
        "/usr/bin/zk-election-exporter",
        "--config=/etc/zk-election-exporter/config.toml",
    ]);
    assert!(start.status.success(), "{}", text(&start));
    let line = format!(
        "zookeeper_election_master{{ensemble=\"default\",election=\"{election}\",znode=\"n_0000000000\",identity=\"device-from-deb\"}} 1"
    );
    wait_for("the packaged agent's master", T, || {
        let (status, body) = http_get(port, "/metrics")?;
        if status == 200 && body.contains(&line) {
            Ok(())
        } else {
            Err(format!("{status}"))
        }
    });
    let user = text(&exec(
        "for comm in $(grep -lx zk-election-exp /proc/[0-9]*/comm); do stat -c %U \"${comm%/comm}\"; done",
    ));
    assert_eq!(
        user.trim(),
        "zk-election-exporter",
        "runs as the service user: {user}"
    );
    let version = text(&exec("/usr/bin/zk-election-exporter --version"));
    assert!(
        version.contains("kerberos: yes"),
        "the package is built with Kerberos: {version}"
    );
    drop(device);
}
