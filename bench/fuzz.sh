#!/usr/bin/env bash
# Long fuzz campaigns (issue 10): runs each property of tests/fuzz.rs with many cases,
# one target at a time, in release mode, and prints cases, time and the outcome.
#
#   bench/fuzz.sh [CASES] [TARGET…]        # CASES defaults to 100000; all targets by default
#   ATLAS_FUZZ_CASES=2000000 bench/fuzz.sh # the same, count from the environment
#
# A failing property prints proptest's minimal failing input. Results go in
# docs/RELIABILITY.md with the command that produced them.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-${ATLAS_FUZZ_CASES:-100000}}
shift || true
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
for target in "${targets[@]}"; do
  start=$(date +%s)
  if ATLAS_FUZZ_CASES=$cases cargo test --release --test fuzz -- --exact "$target" --nocapture >"/tmp/atlas-fuzz-$target.log" 2>&1; then
    outcome=pass
  else
    outcome="FAIL (see /tmp/atlas-fuzz-$target.log)"
  fi
  echo "$target cases=$cases seconds=$(( $(date +%s) - start )) $outcome"
done
