#!/bin/sh
# Installs hestia into $PREFIX/bin (default ~/.local/bin) and says whether
# that directory is on PATH. From a release tarball: ./install.sh (the
# binary beside it). From a checkout: `make install`, which passes bin/hestia.
#
#   PREFIX=/usr/local sudo -E ./install.sh
set -eu
PREFIX=${PREFIX:-$HOME/.local}
src=${1:-$(dirname "$0")/hestia}
if [ ! -f "$src" ]; then
  echo "install.sh: no hestia binary at $src (pass its path as the first argument)" >&2
  exit 1
fi
bindir=$PREFIX/bin
mkdir -p "$bindir"
# install(1) writes a new file and renames it over the old one, so a daemon
# running the old binary keeps running (and `hestia restart` starts the new one).
install -m 0755 "$src" "$bindir/hestia"
# A tarball downloaded by a browser on macOS carries the quarantine flag,
# which stops an unsigned binary from starting.
if [ "$(uname -s)" = Darwin ] && command -v xattr >/dev/null 2>&1; then
  xattr -d com.apple.quarantine "$bindir/hestia" 2>/dev/null || true
fi
version=$("$bindir/hestia" version 2>/dev/null || echo "hestia (cannot run here: built for another system?)")
echo "Installed $bindir/hestia: $version"
case ":${PATH:-}:" in
  *":$bindir:"*)
    echo "$bindir is on your PATH. Start it with \`hestia serve\`, or run it in the background with \`hestia service install\`." ;;
  *)
    echo "$bindir is not on your PATH: add this line to your shell's profile (~/.profile, ~/.bashrc or ~/.zshrc) and open a new terminal:"
    echo "  export PATH=\"$bindir:\$PATH\""
    echo "Then start it with \`hestia serve\`, or run it in the background with \`hestia service install\`." ;;
esac
