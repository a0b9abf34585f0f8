//! The status page in a real browser: Debian's headless Chromium loads `/`
//! against a live ZooKeeper; the DOM shows the right master, a hostile
//! identity is text (no script ran), and a screenshot is kept as a test
//! artefact.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(60);

/// Chromium, headless, as this machine's network allows it.
fn chromium(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .output()
        .expect("chromium (Debian package chromium) must be installed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_masters_and_runs_no_hostile_script() {
    let zk = shared_server();
    let base = unique_path("status");
    let admin = client(&zk.address()).await;
    let calm = format!("{base}/bot_1");
    let hostile = format!("{base}/bot_2");
    mkdir(&admin, &calm).await;
    mkdir(&admin, &hostile).await;
    let c = client(&zk.address()).await;
    candidate(&c, &calm, "n_", b"device-calm").await;
    candidate(
        &c,
        &hostile,
        "n_",
        b"<script>document.title='pwned'</script>\"'&",
    )
    .await;
    let exporter = Exporter::start(&cluster_config(&zk.address(), &format!("{base}/*"), ""));
    exporter
        .until("both masters", T, |m| {
            master_identity(m, &calm).as_deref() == Some("device-calm")
                && master_identity(m, &hostile).is_some()
        })
        .await;
    let dir = temp_dir("chromium");
    let url = format!("http://127.0.0.1:{}/", exporter.port);
    let dom = chromium(&dir, &["--dump-dom", &url]);
    assert!(
        dom.contains("<title>zk-election-exporter</title>"),
        "no script changed the title: {dom}"
    );
    assert!(dom.contains("device-calm"), "{dom}");
    assert!(dom.contains(&calm), "{dom}");
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"),
        "the hostile identity is text: {dom}"
    );
    assert!(!dom.contains("<script"), "no script element: {dom}");
    let shot = dir.join("status.png");
    chromium(
        &dir,
        &[
            "--window-size=1280,900",
            &format!("--screenshot={}", shot.display()),
            &url,
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    eprintln!("screenshot: {}", shot.display());
    // The JSON twin says the same.
    let (status, body) = http_get(exporter.port, "/api/v1/status").unwrap();
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let elections = v["clusters"][0]["elections"].as_array().unwrap();
    assert!(
        elections
            .iter()
            .any(|e| e["election"] == calm.as_str() && e["master"] == "device-calm")
    );
}
