//! Debian's podman as this machine runs it, for the tests of what the
//! project ships as an image or a package.

use std::process::{Command, Output};

/// podman as this machine runs it (crun refuses these hybrid cgroups).
pub fn podman(args: &[&str]) -> Output {
    Command::new("podman")
        .args(["--runtime", "runc", "--cgroup-manager", "cgroupfs"])
        .args(args)
        .output()
        .expect("podman (Debian package podman; scripts/image.sh installs it)")
}

pub fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Removes the container when the test ends, passed or not.
pub struct Container(pub String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "-f", "-t", "2", &self.0]);
    }
}
