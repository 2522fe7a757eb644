#!/usr/bin/env bash
# Installs the Debian packages given as arguments that are not installed yet (apt-get, with
# sudo when not root). Prints what it installs; does nothing when all are present.
# Exit status 3 when some are missing and apt-get is not available.
#   scripts/apt_install.sh PKG...
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "apt_install.sh: missing ${missing[*]} and no apt-get to install them" >&2
  exit 3
fi
echo "installing ${missing[*]} (apt-get)"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
