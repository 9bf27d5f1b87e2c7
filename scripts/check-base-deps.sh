#!/usr/bin/env bash
# check-base-deps.sh: fails, naming them, when the base module's module graph
# (GOWORK=off go list -m all at the root) has a module outside
# scripts/base-allowlist.txt. Run from anywhere; uses the checkout it is in.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
allow="$root/scripts/base-allowlist.txt"
mods=$(cd "$root" && GOWORK=off go list -m -f '{{if not .Main}}{{.Path}}{{end}}' all)
bad=$(comm -23 <(printf '%s\n' "$mods" | sed '/^$/d' | sort -u) \
	<(grep -v -e '^#' -e '^[[:space:]]*$' "$allow" | sort -u))
if [ -n "$bad" ]; then
	echo "the base module github.com/conveyorgo/conveyor requires modules outside scripts/base-allowlist.txt:"
	printf '  %s\n' $bad
	echo "move the code that needs them into a module of its own (docs/modules.md), or justify them in the allow-list"
	exit 1
fi
echo "base module: every module of its graph is in scripts/base-allowlist.txt"
