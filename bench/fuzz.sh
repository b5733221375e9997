#!/usr/bin/env bash
# Long fuzz campaigns (issue 10): runs each property of tests/fuzz.rs in release mode,
# one target at a time, and prints cases, seconds and the outcome per target.
#
#   bench/fuzz.sh --cases 100000 [TARGET…]   # a fixed number of cases per target
#   bench/fuzz.sh --seconds 3600 [TARGET…]   # about that long per target (calibrated on
#                                            # 200 cases, then run as one campaign)
#   ATLAS_FUZZ_CASES=N bench/fuzz.sh         # the count from the environment
#
# A failing property prints proptest's minimal failing input into
# /tmp/atlas-fuzz-<target>.log. Results go in docs/RELIABILITY.md with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${ATLAS_FUZZ_CASES:-100000}
seconds=""
case "${1:-}" in
  --cases) cases=$2; shift 2 ;;
  --seconds) seconds=$2; shift 2 ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(
    graph_files_with_a_recomputed_checksum_never_panic
    fact_cache_entries_never_panic_the_resolver
    scip_indexes_never_panic
    vectors_and_index_metadata_never_panic_a_search
    arbitrary_queries_and_refs_never_panic
    source_text_of_every_language_never_panics_extraction
  )
fi
cargo test --release --test fuzz --no-run >/dev/null 2>&1
run() { # target cases → exit status
  ATLAS_FUZZ_CASES=$2 cargo test --release --test fuzz -- --exact "$1" --nocapture \
    >"/tmp/atlas-fuzz-$1.log" 2>&1
}
for target in "${targets[@]}"; do
  n=$cases
  if [ -n "$seconds" ]; then
    start=$(date +%s.%N)
    run "$target" 200 || true
    per=$(echo "($(date +%s.%N) - $start) / 200" | bc -l)
    n=$(echo "$seconds / $per" | bc)
  fi
  start=$(date +%s)
  if run "$target" "$n"; then outcome=pass; else outcome="FAIL (see /tmp/atlas-fuzz-$target.log)"; fi
  echo "$target cases=$n seconds=$(( $(date +%s) - start )) $outcome"
done
