//! The status page in a real browser: Debian's headless Chromium loads `/`
//! against a live ZooKeeper; the DOM shows the right master, a hostile
//! identity is text (no script ran), a masterless election's row is marked
//! in text and (in the screenshot's pixels) in colour while a calm page has
//! neither, and times read as how long ago they were.

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
            "--force-color-profile=srgb",
            "--hide-scrollbars",
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
    let calm_shot = screenshot(&dir, &url, "calm.png");
    assert_eq!(
        alert_pixels(&calm_shot),
        0,
        "nothing needs attention: no row coloured"
    );
    assert!(!dom.contains("ATTENTION"), "{dom}");
    assert!(dom.contains(" ago)</span>"), "relative times: {dom}");

    // An election loses its master: its row is marked.
    let gone = format!("{base}/bot_3");
    mkdir(&admin, &gone).await;
    let node = candidate(&c, &gone, "n_", b"device-gone").await;
    exporter
        .until("bot_3's master", T, |m| master_identity(m, &gone).is_some())
        .await;
    admin.delete(&format!("{gone}/{node}"), None).await.unwrap();
    wait_for("bot_3 masterless on the status page", T, || {
        let (_, body) = http_get(exporter.port, "/api/v1/status").map_err(|e| e.to_string())?;
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let rows = v["clusters"][0]["elections"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        match rows.iter().find(|e| e["election"] == gone.as_str()) {
            Some(e) if e["state"] == "masterless" => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    let dom = chromium(&dir, &["--dump-dom", &url]);
    let marked = format!(
        "<tr class=\"alert\"><td><span class=\"mark\">\u{26a0} ATTENTION</span> {gone}</td><td>masterless</td>"
    );
    assert!(dom.contains(&marked), "the masterless row is marked: {dom}");
    assert!(
        !dom.contains(&format!("ATTENTION</span> {calm}")),
        "the calm row is not: {dom}"
    );
    let shot = screenshot(&dir, &url, "status.png");
    assert!(
        alert_pixels(&shot) > 1000,
        "the masterless row is coloured ({} pixels)",
        alert_pixels(&shot)
    );
    eprintln!("screenshots: {} {}", calm_shot.display(), shot.display());
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

/// A screenshot of `url`, as a file in `dir`.
fn screenshot(dir: &std::path::Path, url: &str, name: &str) -> std::path::PathBuf {
    let shot = dir.join(name);
    chromium(
        dir,
        &[
            "--window-size=1280,1600",
            &format!("--screenshot={}", shot.display()),
            url,
        ],
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    shot
}

/// Pixels of the page's alert-row background (`#fde0dc`).
fn alert_pixels(shot: &std::path::Path) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3, "{:?}", info.color_type);
    buf[..info.buffer_size()]
        .chunks_exact(step)
        .filter(|p| p[..3] == [0xfd, 0xe0, 0xdc])
        .count()
}
