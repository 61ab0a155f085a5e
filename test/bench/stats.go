// Package bench measures the driver's cost per machine against the
// simulated Harvester, through bin/rancher-machine as Rancher runs it, and
// reports it as one table (see `make bench` and docs/benchmarks.md).
package bench

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of one measurement.
type Summary struct {
	N             int
	P50, P95, Max time.Duration
}

// Summarize returns p50, p95 and max of samples by the nearest-rank
// method (p95 of fewer than 20 samples is the largest but at most one).
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return Summary{N: len(s), P50: nearestRank(s, 50), P95: nearestRank(s, 95), Max: s[len(s)-1]}
}

// nearestRank is the smallest sample with at least p percent of the
// samples at or below it.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
