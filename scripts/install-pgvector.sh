#!/usr/bin/env bash
# Installs pgvector into the local PostgreSQL server when it lacks it, so memory search can be hybrid.
# Debian bookworm ships no pgvector package, so this builds the pinned release from source: the
# source through the Go module proxy (it serves any tagged GitHub repository), the server headers
# from Debian (postgresql-server-dev-<major>). Needs make, a C compiler and root (or write access to
# the server's lib and extension directories). Idempotent: does nothing when `vector` is available.
#   PGVECTOR_VERSION (default v0.8.0)   KEELSON_PGVECTOR_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
set -euo pipefail
version="${PGVECTOR_VERSION:-v0.8.0}"
url="${KEELSON_PGVECTOR_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

available=$(psql "$url" -Atc "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
if [ -n "$available" ]; then
  echo "pgvector $available is already available"
  exit 0
fi
major=$(psql "$url" -Atc "SELECT current_setting('server_version_num')::int / 10000")
pg_config="/usr/lib/postgresql/$major/bin/pg_config"
if [ ! -x "$pg_config" ] || [ ! -d "/usr/include/postgresql/$major/server" ]; then
  echo "installing postgresql-server-dev-$major (headers to build against)"
  apt-get install -y -q "postgresql-server-dev-$major" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "postgresql-server-dev-$major" >/dev/null; }
fi
[ -x "$pg_config" ] || pg_config=$(command -v pg_config)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetching pgvector $version through the Go module proxy"
(cd "$work" && go mod init keelson.local/pgvector-fetch >/dev/null 2>&1 && GOFLAGS=-mod=mod go mod download -json "github.com/pgvector/pgvector@$version" > download.json)
src=$(node -e "process.stdout.write(JSON.parse(require('fs').readFileSync('$work/download.json','utf8')).Dir)")
cp -r "$src" "$work/src" && chmod -R u+w "$work/src"
echo "building pgvector $version against PostgreSQL $major"
# OPTFLAGS="": no -march=native, so the build runs on any x86-64 the server may move to.
make -s -C "$work/src" -j"$(nproc)" PG_CONFIG="$pg_config" OPTFLAGS="" >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
make -s -C "$work/src" install PG_CONFIG="$pg_config" >>"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
available=$(psql "$url" -Atc "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
[ -n "$available" ] || { echo "pgvector was built and installed, but the server does not list it"; exit 1; }
echo "pgvector $available installed"
