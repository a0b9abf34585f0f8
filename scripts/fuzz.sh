#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), seeded from
# tests/fixtures, and prints executions per target. Needs cargo-fuzz and a
# nightly toolchain (`cargo install cargo-fuzz`). Crashes land in
# fuzz/artifacts/<target>/; turn each into a test in src/fuzzing.rs.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fourlw_reply admin_json identity config_toml web_config router)

# Starting corpus: each fixture behind every command selector byte, the example
# configuration, a web config.
seed() {
  local target=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  case "$target" in
    fourlw_reply|admin_json|identity)
      local i=0
      while IFS= read -r -d '' f; do
        for sel in 0 1 2 3 4 5 6 7 8 9 10; do
          { printf "\\x$(printf %02x "$sel")"; cat "$f"; } > "$dir/seed-$i-$sel"
        done
        i=$((i + 1))
      done < <(find tests/fixtures -type f ! -name '*.md' -print0)
      ;;
    config_toml) cp examples/config.toml "$dir/seed-example" ;;
    router)
      # Method byte, flags byte (1: behind basic auth fuzz:fuzz), target,
      # header lines, an empty line, the body; plus every input that once
      # crashed it.
      local i=0 path
      for path in / /metrics /healthz /-/healthy /ready /-/ready /-/reload /api/v1/status \
          /api/v1/trees /api/v1/elections/bots/bot_1 '/api/v1/events?since=0&until=1e9&limit=5&kind=switch' \
          '/api/v1/elections/bots/bot_2?cluster=c'; do
        for sel in 0 1; do
          printf "\\x0$sel\\x0$((i % 2))%s\naccept-encoding:gzip\nauthorization:Basic ZnV6ejpmdXp6\n\n" "$path" > "$dir/seed-$i-$sel"
        done
        i=$((i + 1))
      done
      cp tests/fuzz-regressions/router/* "$dir/"
      ;;
    web_config)
      printf 'tls_server_config:\n  cert_file: a.pem\n  key_file: b.pem\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: c.pem\nbasic_auth_users:\n  u: $2y$04$wNKv/2/lm6mc9K9AP7bW2.McmW/i0FiyvhZg3BXGUGU7qJGji9Zje\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\n' > "$dir/seed-web"
      ;;
  esac
}

for target in "${targets[@]}"; do
  seed "$target"
  log=$(mktemp)
  # -s none: no sanitizer (safe Rust; panics and aborts are what is sought).
  cargo +nightly fuzz run -s none "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>"$log" || {
      tail -40 "$log"; echo "fuzz target $target FAILED: see fuzz/artifacts/$target" >&2; exit 1; }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  echo "$target: $runs executions in ${seconds}s, no crash"
  rm -f "$log"
done
