#!/usr/bin/env bash
# bench/sweep.sh: every measurement in docs/performance.md, one JSON line
# per run in $OUT/*.jsonl (default ./perf-results). DURATION (default 10s)
# is the launch window of each run; SHORT (default 5s) that of the sweeps.
# Run from the repository root.
set -euo pipefail
OUT=${OUT:-perf-results}
DURATION=${DURATION:-10s}
SHORT=${SHORT:-5s}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
go build -o "$OUT/duroxide-stress" ./cmd/duroxide-stress
(cd bench/peers && go build -o "$OUT/peers" .)
stress="$OUT/duroxide-stress -quiet -json"
peers="$OUT/peers -quiet -json"
load() { printf '# %s load average: %s\n' "$1" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2; }

load "peers, poll"
$peers -duration "$DURATION" -variant all -wait poll >"$OUT/peers-poll.jsonl"
load "peers, native wait"
$peers -duration "$SHORT" -variant all -wait native >"$OUT/peers-native.jsonl"
load "cosmostest latency"
$stress -backend cosmostest -duration "$SHORT" -latency 0,2ms,5ms,10ms >"$OUT/cosmos-latency.jsonl"
load "cosmostest concurrency"
$stress -backend cosmostest -duration "$SHORT" -latency 5ms -concurrency 2/2,4/4,8/8,16/16 -inflight 40 >"$OUT/cosmos-concurrency.jsonl"
$stress -backend cosmostest -duration "$SHORT" -latency 0 -concurrency 4/4,8/8 -inflight 40 >>"$OUT/cosmos-concurrency.jsonl"
load "fan-out"
$stress -duration "$SHORT" -fanout 5,50,500 -activity-delay 0 -concurrency 8/8 -inflight 4 >"$OUT/fanout.jsonl"
load "history length"
for steps in 10 100 500; do
	$stress -duration "$SHORT" -workload long-history -steps $steps -activity-delay 0 -concurrency 8/8 -inflight 4 >>"$OUT/history.jsonl"
	$stress -duration "$SHORT" -workload continue-as-new -steps $steps -activity-delay 0 -concurrency 8/8 -inflight 4 >>"$OUT/history.jsonl"
done
load "large payload"
$stress -duration "$SHORT" -workload large -inflight 5 >"$OUT/large.jsonl"
$stress -duration 2s -workload large -inflight 5 -backend cosmostest >>"$OUT/large.jsonl"
load "done"
