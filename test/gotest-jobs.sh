#!/usr/bin/env bash
# gotest-jobs.sh: `make test`'s runner. The unit packages run in one
# `go test` process; the end-to-end ones, each of which starts its own
# simulated Harvester, run as separate jobs, at most TEST_JOBS at a time,
# in the order given (longest first). Every simulator alive costs CPU even
# at rest, so on a slow 2-core machine too many at once starve the tests
# past their deadlines; a bounded queue keeps the cores busy without that.
#
# Usage: gotest-jobs.sh UNIT_PKGS -- JOB... where each JOB is one string of
# `go test` arguments (word-split, quotes not honoured: patterns must not
# hold spaces), or "@chain PKG..." : packages run one after another on one
# simulator by E2E_CHAIN (test/harness/e2e-chain). GOTEST is the go test
# command line; TEST_JOBS the bound.
#
# Its closing lines say what the run cost, to compare two runs on one
# machine: the time, the CPU-seconds of every process it waited for (the
# kernel's count), and from the simulators' ledger (HARVESTER_SIM_LEDGER,
# a line per simulator when it stops: sim/ledger.go) how many started,
# their minutes alive and the requests their kube-apiservers served. A
# missing ledger only leaves those figures out.
set -uo pipefail

units=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do units+=("$1"); shift; done
shift || { echo "gotest-jobs: missing -- before the jobs" >&2; exit 2; }
: "${GOTEST:?GOTEST must be the go test command}" "${TEST_JOBS:=4}"
read -r -a gotest <<<"$GOTEST"
began=$SECONDS
own_ledger=""
if [ -z "${HARVESTER_SIM_LEDGER:-}" ] && own_ledger=$(mktemp "${TMPDIR:-/tmp}/harvester-sim-ledger.XXXXXX"); then
	export HARVESTER_SIM_LEDGER=$own_ledger
fi

# cpu_seconds: the CPU time (user and system) of this shell's children
# that it has waited for, and of theirs: /proc's cutime and cstime, in
# clock ticks.
cpu_seconds() {
	local stat fields
	stat=$(</proc/$$/stat) || return 1
	read -r -a fields <<<"${stat##*) }" # fields from the 3rd (state) on
	echo $(((fields[13] + fields[14]) / $(getconf CLK_TCK)))
}

# cost prints the run's closing figures.
cost() {
	local took=$((SECONDS - began)) cpu sims=""
	cpu=$(cpu_seconds) || cpu="?"
	echo "make test: took $((took / 60)) min $((took % 60)) s, $cpu CPU-seconds (its processes', from the kernel)" >&2
	if [ -n "${HARVESTER_SIM_LEDGER:-}" ] && [ -r "$HARVESTER_SIM_LEDGER" ]; then
		sims=$(awk '$1 == "harvester-sim" {
			n++
			for (i = 2; i <= NF; i++) {
				split($i, kv, "=")
				if (kv[1] == "minutes") minutes += kv[2]
				if (kv[1] == "requests") { if (kv[2] == "?") unknown++; else requests += kv[2] }
			}
		}
		END {
			printf "%d simulators started, %.1f simulator-minutes, %d requests served by their kube-apiservers", n, minutes, requests
			if (unknown) printf " (%d could not count theirs)", unknown
		}' "$HARVESTER_SIM_LEDGER") || sims=""
	fi
	[ -z "$sims" ] || echo "make test: $sims" >&2
	[ -z "$own_ledger" ] || rm -f "$own_ledger"
}

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
	if [ "${args[0]}" = "@chain" ]; then
		"${E2E_CHAIN:?E2E_CHAIN must be the e2e-chain program}" "${gotest[@]}" -- "${args[@]:1}" &
	else
		"${gotest[@]}" "${args[@]}" &
	fi
	job[$!]=$spec
done
while [ "${#job[@]}" -gt 0 ] || [ "$unitRC" = -1 ]; do reap; done

[ "$unitRC" -eq 0 ] || failed+=("unit packages")
cost
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'make test: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "make test: the unit packages and $# end-to-end jobs passed" >&2
