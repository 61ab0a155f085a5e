package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// BenchmarkSimulatorReady measures the time from start to the ready file
// and the memory the simulator and its control plane hold once ready. The
// under-10-s target it had went with the hand-written controllers; with
// KubeVirt's and Harvester's own processes a start takes 25-40 s on 2 idle
// cores (docs/sim.md, "Running it", has the measured figures).
func BenchmarkSimulatorReady(b *testing.B) {
	var rssMB float64
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, err := simtest.Start(ctx, simtest.Options{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rssMB += float64(rssKB(s.PID(), s.Dir)) / 1024
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(rssMB/float64(b.N), "MB-rss")
}

// rssKB sums the resident memory of the simulator and the processes whose
// arguments name its state dir.
func rssKB(simPID int, dir string) int {
	total := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if pid != simPID && !strings.Contains(string(cmdline), dir+"/") {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				total += kb
			}
		}
	}
	return total
}
