# Sourced by .ci/run: puts the project's Node LTS (24) first on PATH, with its headers.
# The npm registry ships the official binary and headers: the `node` package installs the
# platform's `node-<os>-<arch>` package, which we install directly (it has no install script), so a
# machine whose own Node is older gets the supported one without any other download. Native modules
# (better-sqlite3) are then built against these headers (npm_config_nodedir): without them node-gyp
# downloads the headers from nodejs.org, which a machine without that access cannot do. So a Node 24
# that is already first on PATH is used only when its own headers are beside it.
NODE_LTS_MAJOR=24
node_lts_headers() {
  # The installation root of the `node` on PATH when it is the LTS and has its headers there.
  node -e "process.exit(+process.versions.node.split('.')[0] === ${NODE_LTS_MAJOR} ? 0 : 1)" 2>/dev/null || return 1
  local root
  root=$(node -p "require('path').resolve(process.execPath, '..', '..')" 2>/dev/null) || return 1
  [ -f "$root/include/node/node_api.h" ] || return 1
  printf '%s\n' "$root"
}
if node_root=$(node_lts_headers); then
  export npm_config_nodedir="$node_root"
else
  node_prefix=${NODE_LTS_DIR:-$HOME/.cache/outreach-crm/node${NODE_LTS_MAJOR}}
  case "$(uname -m)" in aarch64|arm64) node_arch=arm64 ;; *) node_arch=x64 ;; esac
  node_pkg=node-linux-$node_arch
  node_home=$node_prefix/node_modules/$node_pkg
  if [ ! -x "$node_home/bin/node" ]; then
    echo "ci: installing Node ${NODE_LTS_MAJOR} from the npm registry into $node_prefix"
    npm install --prefix "$node_prefix" --no-audit --no-fund --no-save "$node_pkg@${NODE_LTS_MAJOR}" >/dev/null
  fi
  export PATH="$node_home/bin:$PATH"
  export npm_config_nodedir="$node_home"
fi
echo "ci: node $(node --version), npm $(npm --version), headers from $npm_config_nodedir"
