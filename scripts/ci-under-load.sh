#!/usr/bin/env bash
# Runs CI (.ci/run, or the command given) while a CPU hog keeps one core busy: the proof that the suite does
# not depend on an idle machine. The hog is one busy process at normal priority, so on a 2-core machine it
# takes one core for the whole run; it is stopped by PID when the run ends, however it ends.
set -uo pipefail
cd "$(dirname "$0")/.."

node -e 'for (;;) {}' &
hog=$!
trap 'kill "$hog" 2>/dev/null' EXIT
echo "== CPU hog: PID $hog, $(nproc) cores"

if [ $# -gt 0 ]; then "$@"; else bash .ci/run; fi
status=$?
echo "== under load: exit $status"
exit "$status"
