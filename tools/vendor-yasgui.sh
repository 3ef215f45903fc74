#!/usr/bin/env bash
# Fetch YASGUI (the SPARQL editor and result views of the WDQS-like query page) from the npm
# registry at build time and copy its two dist files into kgcult/serve/web/vendor/, which is
# git-ignored and carried by the wheel as package data. Nothing is fetched from a CDN at run
# time. Without npm the page falls back to the plain query page (docs/serve.md).
#
# Package: @zazuko/yasgui (MIT, https://github.com/rdfjs/Yasgui, a fork of TriplyDB's Yasgui),
# pinned below; `npm pack` checks the tarball against the registry's integrity hash.
set -euo pipefail
VERSION="${YASGUI_VERSION:-4.6.2}"
cd "$(dirname "$0")/.."
dest=kgcult/serve/web/vendor
if [ -f "$dest/VERSION" ] && [ "$(head -1 "$dest/VERSION")" = "@zazuko/yasgui@$VERSION" ]; then
  echo "vendor: @zazuko/yasgui@$VERSION already in $dest"; exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "note: npm not found: the query page falls back to the plain page (no YASGUI editor)" >&2
  exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && npm pack --silent "@zazuko/yasgui@$VERSION" >/dev/null && tar xzf zazuko-yasgui-*.tgz); then
  echo "note: npm could not fetch @zazuko/yasgui@$VERSION: the query page falls back to the plain page" >&2
  exit 0
fi
mkdir -p "$dest"
cp "$tmp/package/build/yasgui.min.js" "$tmp/package/build/yasgui.min.css" "$dest/"
license=$(cd "$tmp/package" && node -e 'process.stdout.write(require("./package.json").license)' 2>/dev/null || echo MIT)
{ echo "@zazuko/yasgui@$VERSION"; echo "license: $license (https://github.com/rdfjs/Yasgui)";
  (cd "$dest" && sha256sum yasgui.min.js yasgui.min.css); } > "$dest/VERSION"
echo "vendor: @zazuko/yasgui@$VERSION -> $dest"
