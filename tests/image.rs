//! The shipped Dockerfile, built and run for real: `scripts/image.sh` builds
//! it with Debian's podman (the runtime base made by debootstrap, the binary
//! prebuilt by cargo: no registry here serves a Rust image), then the image
//! runs as a user would run it: non-root, read-only root filesystem, no
//! capabilities, `--zk` at a test ZooKeeper. Its `/metrics` names the
//! election's master, its HEALTHCHECK passes, `--version` answers, and its
//! size stays in bounds (recorded in docs/benchmarks.md).

mod common;

use std::process::Command;
use std::time::Duration;

use common::podman::{Container, podman, text};
use common::*;

const T: Duration = Duration::from_secs(120);
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TAG: &str = "zk-election-exporter:test";

/// Runs the image detached as a user would harden it: its own network
/// with `-p publish` (the host's loopback reachable as 10.0.2.2), read-only
/// root, no capabilities, no new privileges, explicit limits (podman's
/// defaults exceed this machine's hard ones); `options` before the image,
/// `args` after it. No systemd here to run the health check on a timer:
/// `podman healthcheck run` runs it when a test asks.
fn run_hardened(name: &str, publish: &str, options: &[&str], args: &[&str]) -> Container {
    let mut all = vec![
        "run",
        "-d",
        "--name",
        name,
        "--network",
        "slirp4netns:allow_host_loopback=true",
        "-p",
        publish,
        "--read-only",
        "--cap-drop=ALL",
        "--security-opt",
        "no-new-privileges",
        "--health-interval=disable",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=512:512",
    ];
    all.extend_from_slice(options);
    all.push(TAG);
    all.extend_from_slice(args);
    let run = podman(&all);
    assert!(run.status.success(), "podman run: {}", text(&run));
    Container(name.to_owned())
}

/// Runs the image once, without network, to completion: `args` are
/// podman's from the image on. Explicit limits: podman's defaults exceed
/// this machine's hard ones.
fn run_once(args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "run",
        "--rm",
        "--network",
        "none",
        "--no-healthcheck",
        "--ulimit",
        "nofile=1024:1024",
        "--ulimit",
        "nproc=512:512",
    ];
    all.extend_from_slice(args);
    podman(&all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_builds_and_runs_non_root_read_only_against_zookeeper() {
    let build = Command::new(format!("{ROOT}/scripts/image.sh"))
        .arg(TAG)
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(build.status.success(), "scripts/image.sh: {}", text(&build));
    let size: u64 = text(&podman(&["image", "inspect", "--format", "{{.Size}}", TAG]))
        .trim()
        .parse()
        .unwrap();
    eprintln!("image {TAG}: {} MiB", size / 1024 / 1024);
    assert!(
        size < 160 * 1024 * 1024,
        "the image grew to {} MiB (docs/benchmarks.md records ~108)",
        size / 1024 / 1024
    );
    let config = text(&podman(&[
        "image",
        "inspect",
        "--format",
        "{{.Config.User}} {{json .Config.Healthcheck}}",
        TAG,
    ]));
    assert!(config.starts_with("10001 "), "runs as uid 10001: {config}");
    assert!(
        config.contains("/healthz"),
        "keeps its HEALTHCHECK: {config}"
    );

    let version = run_once(&[TAG, "--version"]);
    assert!(version.status.success(), "{}", text(&version));
    assert!(
        text(&version).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&version)
    );

    // The licences travel with the binary.
    let licences = run_once(&[
        "--entrypoint",
        "/bin/sh",
        TAG,
        "-c",
        "cd /usr/share/doc/zk-election-exporter && head -c 200 LICENSE && echo && grep -c '^Licence: ' THIRD-PARTY-LICENSES",
    ]);
    let licences = text(&licences);
    assert!(licences.contains("Apache License"), "{licences}");
    let crates: usize = licences
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .parse()
        .unwrap_or(0);
    assert!(
        crates > 100,
        "the licences of every linked crate: {licences}"
    );

    let zk = shared_server();
    let election = format!("{}/bot_1", unique_path("image"));
    let admin = client(&zk.address()).await;
    mkdir(&admin, &election).await;
    let device = client(&zk.address()).await;
    candidate(&device, &election, "n_", b"device-in-image").await;

    let port = free_port();
    let name = format!("zkee-image-test-{}", std::process::id());
    let publish = format!("127.0.0.1:{port}:9141");
    // The container's own network, as `docker run -p` gives it: the agent
    // listens on its default 9141 there (which the HEALTHCHECK asks), and
    // reaches the host's loopback, where the test ZooKeeper listens, as
    // 10.0.2.2.
    let zk_port = zk.address().rsplit_once(':').unwrap().1.to_owned();
    let zk_flag = format!("--zk=10.0.2.2:{zk_port}");
    let election_flag = format!(
        "--election={}",
        election.rsplit_once('/').unwrap().0.to_owned() + "/*"
    );
    let _container = run_hardened(&name, &publish, &[], &[&zk_flag, &election_flag]);

    let metrics = wait_for("the containerised agent's master", T, || {
        let (status, body) = http_get(port, "/metrics")?;
        let line = format!(
            "zookeeper_election_master{{ensemble=\"default\",election=\"{election}\",znode=\"n_0000000000\",identity=\"device-in-image\"}} 1"
        );
        if status == 200 && body.contains(&line) {
            Ok(body)
        } else {
            let logs = text(&podman(&["logs", "--tail", "5", &name]));
            Err(format!("{status}; logs: {logs}"))
        }
    });
    assert!(
        metrics.contains("zookeeper_up{"),
        "four-letter words polled"
    );

    // Non-root, read-only: as the agent's own process sees it.
    let id = podman(&["exec", &name, "id", "-u"]);
    assert_eq!(text(&id).trim(), "10001");
    let write = podman(&["exec", &name, "touch", "/usr/local/bin/x"]);
    assert!(!write.status.success(), "the root filesystem is read-only");

    // The image's own HEALTHCHECK, run by podman.
    let health = podman(&["healthcheck", "run", &name]);
    assert!(health.status.success(), "healthcheck: {}", text(&health));
    drop(device);
    kerberos_in_the_image().await;
}

/// The image against a Kerberos-only ZooKeeper: the GSSAPI library it
/// carries, krb5.conf and the keytab mounted read-only as a secret would
/// be, tickets in memory on the read-only root.
async fn kerberos_in_the_image() {
    use common::kdc::{KazooWriter, Kdc, REALM, kerberized_zookeeper};
    let kdc = Kdc::start();
    let zk = kerberized_zookeeper(&kdc);
    let app_keytab = kdc.principal("app-img", "10h");
    let agent_keytab = kdc.principal("agent-img", "10h");
    let (app, agent) = (format!("app-img@{REALM}"), format!("agent-img@{REALM}"));
    let acl = [
        ["sasl", app.as_str(), "rwcda"],
        ["sasl", agent.as_str(), "r"],
    ];
    let base = unique_path("image-krb");
    let election = format!("{base}/bot_1");
    let mut w = KazooWriter::connect(&kdc, zk.port, &app_keytab);
    w.create(&base, b"", false, &acl);
    w.create(&election, b"", false, &acl);
    w.create(&format!("{election}/n_0000000000"), b"device-k", true, &acl);
    // What a Secret volume holds: readable by the image's uid 10001.
    let secrets = temp_dir("image-krb-secrets");
    std::fs::copy(&agent_keytab, secrets.join("agent.keytab")).unwrap();
    std::fs::copy(
        kdc.conf_at("image", "10.0.2.2", ""),
        secrets.join("krb5.conf"),
    )
    .unwrap();
    let config = secrets.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[clusters]]\nservers = [\"10.0.2.2:{}\"]\nfour_letter_words = {{ enabled = false }}\n\
             [clusters.auth]\nscheme = \"sasl\"\nmechanism = \"GSSAPI\"\nprincipal = \"{agent}\"\n\
             keytab = \"/etc/zk-election-exporter/auth/agent.keytab\"\n\
             krb5_conf = \"/etc/zk-election-exporter/auth/krb5.conf\"\nserver_name = \"localhost\"\n\
             [[clusters.elections]]\npath = \"{base}/*\"\n",
            zk.port
        ),
    )
    .unwrap();
    for f in ["agent.keytab", "krb5.conf", "config.toml"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(secrets.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let port = free_port();
    let name = format!("zkee-image-krb-{}", std::process::id());
    let mount = format!("{}:/etc/zk-election-exporter/auth:ro", secrets.display());
    let _container = run_hardened(
        &name,
        &format!("127.0.0.1:{port}:9141"),
        &["-v", &mount],
        &["--config=/etc/zk-election-exporter/auth/config.toml"],
    );
    wait_for(
        "the containerised agent's master through Kerberos",
        T,
        || {
            let (status, body) = http_get(port, "/metrics")?;
            let master =
                format!("election=\"{election}\",znode=\"n_0000000000\",identity=\"device-k\"}} 1");
            if status == 200
                && body.contains(&master)
                && body.contains("zookeeper_session_kerberos_ticket_ok{ensemble=\"default\"} 1")
            {
                Ok(())
            } else {
                let logs = text(&podman(&["logs", "--tail", "5", &name]));
                Err(format!("{status}; logs: {logs}"))
            }
        },
    );
    drop(w);
}
