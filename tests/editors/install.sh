#!/usr/bin/env bash
# What the real-editor tests need beyond the Python environment: Debian's Neovim (0.7) for the Neovim test.
# Run by .ci/run before the test suite; safe to run again (installs only what is missing). Without root or
# without Debian's package registry it says so and the tests that need the missing editor skip with a message.
set -uo pipefail

missing=()
command -v nvim >/dev/null || missing+=(neovim)

if [ "${#missing[@]}" -eq 0 ]; then
  echo "editors: everything needed is installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "editors: cannot install ${missing[*]} (needs root and apt-get); the tests that need them will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/torchls-editors-apt.log 2>&1; then
  apt-get update -q >>/tmp/torchls-editors-apt.log 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/torchls-editors-apt.log 2>&1 ||
    echo "editors: installing ${missing[*]} failed (see /tmp/torchls-editors-apt.log); those tests will skip" >&2
fi
echo "editors: installed ${missing[*]}"
