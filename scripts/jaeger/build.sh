#!/usr/bin/env bash
# Builds Jaeger's all-in-one binary (cmd/jaeger, v1.76.0) into $KEELSON_HOME/bin once per machine.
# `go install …/cmd/jaeger@v1.76.0` refuses the module (its go.mod has replace directives), so this
# folder is a module of its own that requires it as a tool, with the same replace; the build takes
# several minutes the first time (the Go module and build caches make later ones quick).
set -euo pipefail
cd "$(dirname "$0")"
version=v1.76.0
dest="${KEELSON_HOME:-$HOME/.keelson}/bin"
if [ -x "$dest/jaeger" ] && "$dest/jaeger" version 2>/dev/null | grep -q "\"gitVersion\":\"$version\""; then
  echo "found $dest/jaeger ($version)"
  exit 0
fi
echo "building jaeger $version into $dest (once per machine, several minutes)"
mkdir -p "$dest"
go build -o "$dest/jaeger.partial" \
  -ldflags "-X github.com/jaegertracing/jaeger/internal/version.latestVersion=$version" \
  github.com/jaegertracing/jaeger/cmd/jaeger
mv "$dest/jaeger.partial" "$dest/jaeger"
"$dest/jaeger" version
