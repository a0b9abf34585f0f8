#!/usr/bin/env bash
# Regenerates the mixin's committed output from mixin/ (Debian's jsonnet):
# alerts/zookeeper.rules.yml, dashboards/*.json,
# deploy/kubernetes/prometheusrule.yaml and the agent's alert catalogue
# (src/model/alerting/catalogue.rs).
#   scripts/generate.sh           rewrite the files
#   scripts/generate.sh --check   fail, naming them, if they differ
set -euo pipefail
cd "$(dirname "$0")/.."
command -v jsonnet >/dev/null || { echo "jsonnet is missing: apt-get install jsonnet" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# jsonnet -m writes into folders that exist: make each file's.
for file in $(jsonnet -J mixin -S -e 'std.join("\n", std.objectFields(import "mixin/generate.jsonnet"))'); do
  mkdir -p "$out/$(dirname "$file")"
done
files=$(jsonnet -J mixin -S -m "$out" mixin/generate.jsonnet)
status=0
for file in $files; do
  relative=${file#"$out"/}
  if [ "${1:-}" = --check ]; then
    cmp -s "$file" "$relative" || { echo "differs from a fresh generation: $relative" >&2; status=1; }
  else
    mkdir -p "$(dirname "$relative")" && cp "$file" "$relative"
  fi
done
exit "$status"
