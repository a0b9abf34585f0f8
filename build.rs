//! Bakes the git revision into `zookeeper_exporter_build_info` when the
//! source is a git checkout; otherwise the label says `unknown`.

fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs");
    println!("cargo:rerun-if-env-changed=ZKEE_GIT_REVISION");
    if std::env::var_os("ZKEE_GIT_REVISION").is_some() {
        return;
    }
    let revision = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok());
    if let Some(r) = revision {
        println!("cargo:rustc-env=ZKEE_GIT_REVISION={}", r.trim());
    }
}
