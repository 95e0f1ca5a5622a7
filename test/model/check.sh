#!/usr/bin/env bash
# Model-checks the Cluster cross-slot spend (test/model/cross-slot.pml) with spin: for each
# configuration, spin -a writes the verifier, gcc compiles it, pan searches every interleaving.
# Fails on any assertion violation, LTL violation, or search cut short; and fails if the model
# no longer finds the known bug of a mutant (buckets compensated by the plain refund rule).
#   test/model/check.sh          the CI set (seconds)
#   test/model/check.sh --deep   also clock ticks 0..3 on buckets (tens of minutes, up to 20 M states)
set -euo pipefail

model="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cross-slot.pml"
deep=0
memlim=2048 # MB for pan's state store
if [ "${1:-}" = "--deep" ]; then deep=1 memlim=8192; fi
for tool in spin gcc; do
  command -v "$tool" >/dev/null || { echo "check.sh: $tool is missing (apt-get install -y $tool)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

# check NAME EXPECT SPIN_FLAGS CLAIM...: builds one verifier, then runs pan once per LTL claim
# (assertions are checked in every run). EXPECT: 'pass', or 'fail' for a mutant the model must
# catch. A claim [] p is a safety property (a violation ends the never claim: no -a needed);
# 'settles' is a liveness property (-a: acceptance cycles).
check() {
  local name="$1" expect="$2" flags="$3"
  shift 3
  local dir="$work/$name"
  mkdir -p "$dir"
  cp "$model" "$dir/"
  # shellcheck disable=SC2086
  if ! (cd "$dir" && spin $flags -a cross-slot.pml >spin.log 2>&1 &&
    gcc -O1 -w -DCOLLAPSE -DMEMLIM="$memlim" -o pan pan.c); then
    echo "FAIL  $name: spin could not build the verifier"
    cat "$dir/spin.log"
    failed=1
    return
  fi
  local claim log errors states seconds
  for claim in "$@"; do
    log="$dir/$claim.log"
    rm -f "$dir/cross-slot.pml.trail"
    if [ "$claim" = settles ]; then
      (cd "$dir" && ./pan -m300000 -a -N "$claim" >"$log" 2>&1) || true
    else
      (cd "$dir" && ./pan -m300000 -N "$claim" >"$log" 2>&1) || true
    fi
    errors="$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$log" | head -1)"
    states="$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$log" | head -1)"
    seconds="$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds/\1/p' "$log" | head -1)"
    if [ -z "$errors" ] || grep -q 'max search depth too small\|out of memory' "$log"; then
      echo "FAIL  $name $claim: the search did not complete"
      cat "$log"
      failed=1
    elif [ "$expect" = pass ] && [ "$errors" != 0 ]; then
      echo "FAIL  $name $claim: $errors error(s); the interleaving (pan -t replayed by spin):"
      grep -E 'violated|acceptance cycle|claim' "$log" || true
      # shellcheck disable=SC2086
      (cd "$dir" && spin $flags -t cross-slot.pml 2>&1 | grep -E '^ +(t=|slot)|assert|cycle') || true
      failed=1
    elif [ "$expect" = fail ] && [ "$errors" = 0 ]; then
      echo "FAIL  $name $claim: the model no longer finds the bug this mutant carries"
      failed=1
    else
      printf 'ok    %-24s %-22s %9s states %6s s%s\n' "$name" "$claim" "$states" "$seconds" \
        "$([ "$expect" = fail ] && echo '  (violation found, as it must be)')"
    fi
  done
}

safety="neverOverAdmits noBudgetCreated refusalLeavesNoCharge"
for limit in 1 2; do
  # Counters (fixed window; sliding window inside one window): every property.
  check "counter-limit$limit" pass "-DLIMIT=$limit -DBUCKET=0" $safety settles
done
# Token bucket / GCRA (lib/bucket.lua), clock ticks 0..2. Every run checks the assertions (the
# three safety properties after every script run); limit 1 also the liveness property.
check "bucket-limit1-t2" pass "-DLIMIT=1 -DBUCKET=1 -DTMAX=2" neverOverAdmits settles
check "bucket-limit2-t2-cost2" pass "-DLIMIT=2 -DBUCKET=1 -DTMAX=2 -DCOST2=1" neverOverAdmits
# The compensation before pending entries (refund rule: min(cost, b, m)) keeps part of a refused
# call's charge when other spends came between: the model must find it.
check "mutant-refund-rule" fail "-DLIMIT=2 -DBUCKET=1 -DTMAX=2 -DMUTANT_REFUND_RULE" neverOverAdmits
if [ "$deep" = 1 ]; then
  check "bucket-limit2-t2" pass "-DLIMIT=2 -DBUCKET=1 -DTMAX=2" $safety settles
  check "bucket-limit1-t3" pass "-DLIMIT=1 -DBUCKET=1 -DTMAX=3" $safety settles
  check "bucket-limit2-t3-cost2" pass "-DLIMIT=2 -DBUCKET=1 -DTMAX=3 -DCOST2=1" neverOverAdmits
  check "bucket-limit2-t3" pass "-DLIMIT=2 -DBUCKET=1 -DTMAX=3" neverOverAdmits
fi
exit "$failed"
