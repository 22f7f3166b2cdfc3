#!/usr/bin/env bash
# Runs every fuzz target of the repository for FUZZTIME each (default 30s), one after the other,
# and prints one summary line per target: its package, name, execs and result (new inputs are
# minimized for at most FUZZMINIMIZETIME, default 5s, so big inputs do not eat the run). A target that
# finds a failure leaves the input in its package's testdata/fuzz/<target>/ (commit it as a
# regression seed once fixed) and makes the script exit non-zero after the others ran.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
summary=()
failed=0
for pkg in $($GO list ./...); do
  dir=$($GO list -f '{{.Dir}}' "$pkg")
  targets=$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u)
  for t in $targets; do
    log=$(mktemp)
    $GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "${FUZZMINIMIZETIME:-5s}" "$pkg" >"$log" 2>&1
    rc=$?
    execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | sed 's/execs: //')
    if [ $rc -eq 0 ]; then
      result="ok"
    else
      result="FAIL: $(grep -m1 -E 'Failing input written to|panic:|--- FAIL' "$log" | sed 's/^ *//')"
      failed=1
      sed 's/^/    /' "$log" | tail -40
    fi
    line=$(printf '%-52s %-22s execs %-10s %s' "${pkg#github.com/echogate/echogate/}" "$t" "${execs:-0}" "$result")
    echo "$line"
    summary+=("$line")
    rm -f "$log"
  done
done
echo
echo "fuzz summary (FUZZTIME=$FUZZTIME):"
printf '%s\n' "${summary[@]}"
exit $failed
