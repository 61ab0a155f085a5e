// Command harvester-bench is `make bench`: it measures the driver against
// the simulated Harvester (test/bench), prints the table and writes
// docs/benchmarks.md and its plot.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/harvester-kit/harvester-machine/test/bench"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func main() {
	// Everything below runs in the private network namespace (compiled
	// before: `go run` builds this program outside it).
	iso := harness.Enter()
	if err := run(iso); err != nil {
		fmt.Fprintln(os.Stderr, "harvester-bench:", err)
		os.Exit(1)
	}
}

func run(iso harness.Isolation) error {
	root, err := simtest.RepoRoot()
	if err != nil {
		return err
	}
	o := bench.Options{Root: root, Log: os.Stderr, SimArgs: iso.SimArgs()}
	var pools string
	flag.DurationVar(&o.ScheduleDelay, "schedule-delay", 100*time.Millisecond, "simulator: VMI Pending to Scheduled")
	flag.DurationVar(&o.BootDelay, "boot-delay", 200*time.Millisecond, "simulator: Scheduled to Running")
	flag.DurationVar(&o.IPDelay, "ip-delay", 200*time.Millisecond, "simulator: Running to address reported")
	flag.DurationVar(&o.MigrationDuration, "migration-duration", time.Second, "simulator: a live migration's transfer (phase Running to Succeeded)")
	flag.IntVar(&o.SingleRuns, "single", 5, "machines created one after another (the pool of 1)")
	flag.StringVar(&pools, "pools", "10,50", "sizes of the pools created concurrently, comma-separated (empty: none)")
	flag.IntVar(&o.StartupRuns, "startup-runs", 10, "driver start-ups timed")
	flag.IntVar(&o.NamespaceVMIs, "namespace-vmis", 500, "VMIs seeded to measure a create's cost against the namespace's size (0: skip)")
	day2 := flag.Bool("day2", true, "measure day-2 operations (live migrations, host maintenance)")
	flag.StringVar(&o.DocPath, "doc", filepath.Join(root, "docs", "benchmarks.md"), "document to write the results into (its generated part)")
	flag.StringVar(&o.PlotPath, "plot", filepath.Join(root, "docs", "benchmarks-overhead.png"), "PNG plot of create overhead against pool size")
	flag.Parse()
	o.SkipDay2 = !*day2
	for _, f := range strings.Split(pools, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("--pools: %q is not a list of pool sizes (e.g. 10,50)", pools)
		}
		o.Pools = append(o.Pools, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	t := r.Table()
	fmt.Print(t.Markdown())
	fmt.Print("\nAPI requests per machine:\n" + r.Breakdown())
	if missed := t.Missed(); len(missed) > 0 {
		fmt.Printf("\nTARGETS MISSED: %s (docs/benchmarks.md says why and what would fix it)\n", strings.Join(missed, "; "))
	}
	return r.WriteDoc(o.DocPath, o.PlotPath)
}
