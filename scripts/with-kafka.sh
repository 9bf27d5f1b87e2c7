#!/usr/bin/env bash
# with-kafka.sh CMD [ARGS...]
#
# Runs CMD with KAFKA_BROKERS exported (a comma-separated list of
# host:port), and exits with CMD's exit code:
#   1. $KAFKA_BROKERS, when it is set and not empty;
#   2. else a throwaway cluster started for CMD: three kfake brokers
#      (franz-go's in-process Kafka, with share groups) on free 127.0.0.1
#      ports, run by kafkapubsub/cmd/kfake-cluster, built with $GO (else
#      go); its data is in memory, and gone when it stops after CMD.
#
# KAFKA_FORCE_THROWAWAY=1 skips 1 (to test this script, or to get a clean
# cluster).
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi

log() { echo "with-kafka: $*" >&2; }

if [ "${KAFKA_FORCE_THROWAWAY:-}" != "1" ] && [ -n "${KAFKA_BROKERS:-}" ]; then
	exec "$@"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/with-kafka.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

(cd "$root" && "${GO:-go}" build -o "$dir/kfake-cluster" ./kafkapubsub/cmd/kfake-cluster) || {
	log "could not build kafkapubsub/cmd/kfake-cluster; set KAFKA_BROKERS to use a cluster of your own"
	exit 1
}
# In a session of its own: a Ctrl-C to CMD's process group must not stop
# the cluster while CMD still drains. -parent stops it should this script
# be killed before it can.
setsid "$dir/kfake-cluster" -parent $$ >"$dir/brokers" 2>"$dir/cluster.log" &
pid=$!
brokers=
for _ in $(seq 1 100); do
	brokers=$(head -n 1 "$dir/brokers")
	if [ -n "$brokers" ] || ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [ -z "$brokers" ]; then
	log "the kfake cluster did not start:"
	cat "$dir/cluster.log" >&2 || true
	exit 1
fi
log "started a throwaway kfake cluster (3 brokers, in memory): $brokers"

export KAFKA_BROKERS="$brokers"
set +e
"$@"
rc=$?
set -e
exit "$rc"
