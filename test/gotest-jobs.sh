#!/usr/bin/env bash
# gotest-jobs.sh: `make test`'s runner. The unit packages run in one
# `go test` process; the end-to-end ones, each of which starts its own
# simulated Harvester, run as separate jobs, at most TEST_JOBS at a time,
# in the order given (longest first). Every simulator alive costs CPU even
# at rest, so on a slow 2-core machine seven at once (what `make test` ran
# before) left the tests starved past their deadlines; a bounded queue keeps
# the cores busy without that.
#
# Usage: gotest-jobs.sh UNIT_PKGS -- JOB... where each JOB is one string of
# `go test` arguments (word-split, quotes not honoured: patterns must not
# hold spaces). GOTEST is the go test command line; TEST_JOBS the bound.
set -uo pipefail

units=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do units+=("$1"); shift; done
shift || { echo "gotest-jobs: missing -- before the jobs" >&2; exit 2; }
: "${GOTEST:?GOTEST must be the go test command}" "${TEST_JOBS:=4}"
read -r -a gotest <<<"$GOTEST"

"${gotest[@]}" -p 2 "${units[@]}" &
unitPID=$!
unitRC=-1
failed=()
declare -A job=()

# reap waits for any job to end and records its status.
reap() {
	local pid rc
	pid=
	wait -n -p pid
	rc=$?
	if [ -z "${pid:-}" ]; then
		# No child left to wait for while jobs are still counted: never
		# report success for jobs whose end was not seen.
		echo "gotest-jobs: lost track of: ${job[*]:-} $([ "$unitRC" = -1 ] && echo 'unit packages')" >&2
		exit 2
	fi
	if [ "$pid" = "$unitPID" ]; then
		unitRC=$rc
		return
	fi
	[ "$rc" -eq 0 ] || failed+=("${job[$pid]}")
	unset "job[$pid]"
}

for spec in "$@"; do
	while [ "${#job[@]}" -ge "$TEST_JOBS" ]; do reap; done
	read -r -a args <<<"$spec"
	"${gotest[@]}" "${args[@]}" &
	job[$!]=$spec
done
while [ "${#job[@]}" -gt 0 ] || [ "$unitRC" = -1 ]; do reap; done

[ "$unitRC" -eq 0 ] || failed+=("unit packages")
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'make test: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "make test: the unit packages and $# end-to-end jobs passed" >&2
