#!/usr/bin/env bash
# Builds the Temporal server (go.temporal.io/server cmd/server) and its SQL schema tool (cmd/tools/sql)
# into $KEELSON_HOME/bin as temporal-server and temporal-sql-tool, once per machine: the production
# shape (`npm run start:cluster`, `npm run test:cluster`) runs them on the machine's Postgres.
# The version is the one docker-compose.yml runs (temporalio/auto-setup) and the Temporal CLI embeds,
# so the Go module and build caches are shared with the CLI's build. The schemas are embedded in the
# tool (`--schema-name postgresql/v12/…`), so nothing else is kept.
set -euo pipefail
version=v1.29.1
dest="${KEELSON_HOME:-$HOME/.keelson}/bin"

built_at_version() {
  [ -x "$1" ] && go version -m "$1" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+go\.temporal\.io/server[[:space:]]+$version([[:space:]]|$)"
}

if built_at_version "$dest/temporal-server" && built_at_version "$dest/temporal-sql-tool"; then
  echo "found $dest/temporal-server and $dest/temporal-sql-tool ($version)"
  exit 0
fi
echo "building temporal-server and temporal-sql-tool $version into $dest (once per machine, several minutes)"
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
# `go install pkg@version` builds outside any module; -v names each package as it is compiled.
GOBIN="$work" go install -v "go.temporal.io/server/cmd/server@$version" "go.temporal.io/server/cmd/tools/sql@$version" 2>&1 |
  awk '{ n++; if (n % 50 == 0) { printf "  … %d packages compiled (last: %s)\n", n, $0; fflush() } } END { printf "  %d packages compiled\n", n }'
mv "$work/server" "$dest/temporal-server"
mv "$work/sql" "$dest/temporal-sql-tool"
echo "built in $(( $(date +%s) - started ))s"
built_at_version "$dest/temporal-server" && built_at_version "$dest/temporal-sql-tool"
"$dest/temporal-sql-tool" --version 2>/dev/null | head -n 1 || true
