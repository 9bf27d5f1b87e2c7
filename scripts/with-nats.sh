#!/usr/bin/env bash
# with-nats.sh CMD [ARGS...]
#
# Runs CMD with NATS_URL exported, pointing at a NATS server with JetStream
# on 127.0.0.1, and exits with CMD's exit code:
#   1. $NATS_URL, when it is set and not empty;
#   2. else the server on 127.0.0.1:4222, when one answers;
#   3. else a throwaway nats-server (Debian's package nats-server, from PATH
#      or /usr/sbin) started for CMD with JetStream, its store in a
#      temporary directory, listening on 127.0.0.1 only, on a free port;
#      stopped and removed afterwards.
#
# NATS_FORCE_THROWAWAY=1 skips 1 and 2 (to test this script, or to get a
# clean server).
set -euo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi

log() { echo "with-nats: $*" >&2; }

if [ "${NATS_FORCE_THROWAWAY:-}" != "1" ]; then
	if [ -n "${NATS_URL:-}" ]; then
		exec "$@"
	fi
	if (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
		export NATS_URL="nats://127.0.0.1:4222"
		exec "$@"
	fi
fi

server=$(command -v nats-server 2>/dev/null || true)
if [ -z "$server" ] && [ -x /usr/sbin/nats-server ]; then
	server=/usr/sbin/nats-server
fi
if [ -z "$server" ]; then
	log "no NATS server answers on 127.0.0.1:4222 and nats-server is not installed."
	log "Install it (Debian/Ubuntu: apt-get install nats-server) or set NATS_URL."
	exit 1
fi

free_port() {
	local p
	for p in $(seq "$1" 54322); do
		if ! (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	return 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/with-nats.XXXXXX")
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

# Another process may take the free port before the server binds it: then
# the next free port is tried.
port=54221
for attempt in 1 2 3 4 5; do
	port=$(free_port $((port + 1))) || { log "no free port in 54222-54322"; exit 1; }
	log "starting a throwaway nats-server on 127.0.0.1:$port in $dir"
	# In a session of its own: a Ctrl-C to CMD's process group must not
	# stop the server while CMD still drains.
	setsid "$server" -a 127.0.0.1 -p "$port" -js -sd "$dir/store" -l "$dir/server.log" &
	pid=$!
	for _ in $(seq 1 100); do
		if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
			break 2
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
	if [ "$attempt" = 5 ]; then
		cat "$dir/server.log" >&2 || true
		exit 1
	fi
	log "the server did not start on port $port; trying another"
done

export NATS_URL="nats://127.0.0.1:$port"
set +e
"$@"
rc=$?
set -e
exit "$rc"
