#!/usr/bin/env bash
# Fetches the plotting library `nabla report` inlines into every page (vega,
# vega-lite, vega-embed) from the npm registry with `npm pack`, at the
# versions pinned below, and copies each package's minified browser build and
# LICENSE into third_party/vega/. The copies are checked against
# third_party/vega/SHA256SUMS, so a refresh at the same versions changes
# nothing and a changed upstream tarball is refused.
#
#   scripts/refresh-vega.sh            fetch, verify against SHA256SUMS, copy
#   scripts/refresh-vega.sh --update   after changing a version below: fetch,
#                                      copy and rewrite SHA256SUMS
set -euo pipefail

readonly VEGA_VERSION=5.33.1
readonly VEGA_LITE_VERSION=5.23.0
readonly VEGA_EMBED_VERSION=6.29.0

repo=$(cd "$(dirname "$0")/.." && pwd)
dest="$repo/third_party/vega"
update=0
case "${1:-}" in
  "") ;;
  --update) update=1 ;;
  *) echo "refresh-vega.sh: unknown argument '$1' (expected --update or nothing)" >&2; exit 2 ;;
esac
command -v npm >/dev/null || { echo "refresh-vega.sh: npm is required" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# package version build-file -> $work/out/<name>.min.js and <name>.LICENSE
fetch() {
  local package=$1 version=$2 build=$3
  (cd "$work" && npm pack --silent "$package@$version" >/dev/null)
  mkdir -p "$work/$package" "$work/out"
  tar xzf "$work/$package-$version.tgz" -C "$work/$package"
  cp "$work/$package/package/build/$build" "$work/out/$package.min.js"
  if [[ -f $work/$package/package/LICENSE ]]; then
    cp "$work/$package/package/LICENSE" "$work/out/$package.LICENSE"
  fi
}

# The vega package ships no LICENSE file; its package.json declares
# BSD-3-Clause, the licence of the whole vega project (vega-lite and
# vega-embed come from the same lab under the same terms). Its notice is
# written from the declaration and vega-lite's copy of the BSD-3-Clause terms.
write_vega_license() {
  local declared
  declared=$(node -p "require('$work/vega/package/package.json').license")
  if [[ $declared != BSD-3-Clause ]]; then
    echo "refresh-vega.sh: vega now declares licence '$declared'; review it before vendoring" >&2
    exit 1
  fi
  {
    echo "vega $VEGA_VERSION: licence BSD-3-Clause (declared in the package's package.json;"
    echo "the npm package ships no LICENSE file)."
    echo
    echo "Copyright (c) 2013, Trifacta Inc."
    echo "Copyright (c) 2015, University of Washington Interactive Data Lab."
    tail -n +2 "$work/out/vega-lite.LICENSE"
  } >"$work/out/vega.LICENSE"
}

fetch vega "$VEGA_VERSION" vega.min.js
fetch vega-lite "$VEGA_LITE_VERSION" vega-lite.min.js
fetch vega-embed "$VEGA_EMBED_VERSION" vega-embed.min.js
write_vega_license
cat >"$work/out/VERSIONS" <<EOF
vega $VEGA_VERSION
vega-lite $VEGA_LITE_VERSION
vega-embed $VEGA_EMBED_VERSION
EOF

# A page inlines the scripts inside <script> elements, which a literal
# "</script" would end early.
if grep -il '</script' "$work"/out/*.min.js; then
  echo "refresh-vega.sh: a build contains '</script' and cannot be inlined" >&2
  exit 1
fi

if [[ $update == 1 ]]; then
  (cd "$work/out" && sha256sum -- * >SHA256SUMS)
else
  cp "$dest/SHA256SUMS" "$work/out/SHA256SUMS"
  (cd "$work/out" && sha256sum --quiet -c SHA256SUMS) || {
    echo "refresh-vega.sh: fetched files differ from third_party/vega/SHA256SUMS" >&2
    exit 1
  }
fi
mkdir -p "$dest"
cp "$work"/out/* "$dest/"
echo "third_party/vega: vega $VEGA_VERSION, vega-lite $VEGA_LITE_VERSION, vega-embed $VEGA_EMBED_VERSION"
