#!/usr/bin/env bash
# Instructions per transit query, Arbor against SQLite (through GRDB), counted by callgrind:
# the same queries on both sides in one process, each side's instructions taken from the
# inclusive cost of its query code. Unlike wall-clock ratios on a shared machine, the counts
# repeat exactly from run to run (they leave out cache misses and system calls).
#
# usage: [STEADY=1] ./instruction-ratio.sh QUERY [REPEATS [ARBOR_STORE SQLITE_STORE [--compound]]]
#   QUERY: geo80, geo800, empty, normalized, prefix, subquery; each but empty also with -values
#   (the values path: a struct per row on both sides), and normalized-dictionaries (a dictionary
#   per row: Arbor's dictionary results, GRDB's Rows made into dictionaries)
#   The stores default to those `arbor-bench transit` leaves in $TMPDIR/arbor-bench-transit
#   (transit-compound.* with --compound for the (stop, departureTime) index).
#   STEADY=1: the steady-state cost. The mean over REPEATS queries includes what each side pays
#   once (runtime type metadata, the first parse of a template: about 8k instructions a query for
#   Arbor and 6k for SQLite over 100 queries); with STEADY=1 the queries run REPEATS and then
#   2 x REPEATS times, and the difference of the totals is divided by REPEATS. (The boxes of the
#   first REPEATS queries are the same in both runs; windows and prefixes are drawn afresh, so
#   for those queries the difference is a second sample of the same kind.)
# Needs valgrind and a release build with DWARF 4 debug information for the C targets, which
# valgrind 3.19 can read (swift build -c release -Xcc -gdwarf-4).
set -euo pipefail
query=${1:?query}; repeats=${2:-200}
directory=${TMPDIR:-/tmp}/arbor-bench-transit
arbor=${3:-$directory/transit.arbor}; sqlite=${4:-$directory/transit.sqlite}
shift $(( $# < 4 ? $# : 4 ))
# Arbor: the benchmark's per-query closure (fetch, reading identifier and name, releasing the
# objects). SQLite: the read closure of `timed`, which every query kind runs through (the
# statement prepared once, then every query).
case $query in
  geo80|geo800|empty) arborSymbol='$s11arbor_bench16ArborTransitSideV3geo_6metersSaySdG9latencies_Si8checksumtAA11QueryPointsV_SdtKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  normalized|prefix) arborSymbol='$s11arbor_bench16ArborTransitSideV6prefix_19normalizedAttributeSaySdG9latencies_Si8checksumtAA11QueryPointsV_SbtKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  subquery) arborSymbol='$s11arbor_bench16ArborTransitSideV8subqueryySaySdG9latencies_Si8checksumtAA11QueryPointsVKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  geo80-values|geo800-values) arborSymbol='$s11arbor_bench16ArborTransitSideV9geoValues_6metersSaySdG9latencies_Si8checksumtAA11QueryPointsV_SdtKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  normalized-values|prefix-values) arborSymbol='$s11arbor_bench16ArborTransitSideV12prefixValues_19normalizedAttributeSaySdG9latencies_Si8checksumtAA11QueryPointsV_SbtKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  subquery-values) arborSymbol='$s11arbor_bench16ArborTransitSideV14subqueryValuesySaySdG9latencies_Si8checksumtAA11QueryPointsVKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  normalized-dictionaries) arborSymbol='$s11arbor_bench16ArborTransitSideV18prefixDictionariesySaySdG9latencies_Si8checksumtAA11QueryPointsVKFSi0C020ManagedObjectContextC_SitKXEfU_' ;;
  *) echo "unknown query $query" >&2; exit 2 ;;
esac
sqliteSymbol='$s11arbor_bench17SQLiteTransitSideV5timed_3sql_SaySdG9latencies_Si8checksumtSi_SSSi4GRDB9StatementC_SitKXEtKFAfG_SiAHtAI8DatabaseCKXEfU_'
cd "$(dirname "$0")"
output=$(mktemp)
trap 'rm -f "$output"' EXIT
# The largest inclusive count listed for the symbol (it is listed once per source file its
# inlined code comes from; the largest is the whole).
inclusive() {
  callgrind_annotate --inclusive=yes "$output" 2> /dev/null | grep -F "$1" | grep -vF "$1""TA" \
    | awk '{gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0} END {printf "%.0f\n", max}'
}
# Both sides' inclusive counts for `$1` queries, as "arbor sqlite".
profile() {
  # Deterministic hashing: with a random seed per process, dictionary probes (both sides use
  # them) move a count by a few hundred instructions a query between runs.
  SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file="$output" --toggle-collect="$arborSymbol" --toggle-collect="$sqliteSymbol" \
    .build/release/arbor-bench transit-profile --path "$arbor" --sqlite "$sqlite" --query "$query" --repeats "$1" "${extra[@]}" > /dev/null 2>&1
  echo "$(inclusive "$arborSymbol") $(inclusive "$sqliteSymbol")"
}
extra=("$@")
read -r a s <<< "$(profile "$repeats")"
kind="mean of $repeats"
if [ "${STEADY:-0}" = 1 ]; then
  read -r a2 s2 <<< "$(profile $((2 * repeats)))"
  a=$((a2 - a)); s=$((s2 - s)); kind="steady state: $((2 * repeats)) queries less $repeats"
fi
awk -v q="$query" -v n="$repeats" -v a="$a" -v s="$s" -v kind="$kind" \
  'BEGIN { printf "%s: arbor %.1fk, sqlite %.1fk instructions per query (%s); ratio %.2fx\n", q, a / n / 1000, s / n / 1000, kind, s / a }'
