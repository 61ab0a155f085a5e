package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// machineEnv are the driver settings every machine gets, as Rancher passes
// them: in the environment.
var machineEnv = []string{"HARVESTER_IMAGE_NAME=default/ubuntu-22.04", "HARVESTER_NETWORK_NAME=default/vlan1"}

// machineRun is what the benchmark records of one machine.
type machineRun struct {
	name                   string
	createStart, createEnd time.Time
	returned               time.Time // the driver's "running, address" line: Create returns right after
	addressAt              time.Time // the simulator's annotation address-reported-at
	rmStart, rmEnd         time.Time
	cpu                    time.Duration // user + system CPU of rancher-machine create (its own)
	timeline               []string      // the create's output, each line with its time since the start
	err                    error
}

func (m *machineRun) wait() time.Duration     { return m.returned.Sub(m.addressAt) }
func (m *machineRun) create() time.Duration   { return m.createEnd.Sub(m.createStart) }
func (m *machineRun) removing() time.Duration { return m.rmEnd.Sub(m.rmStart) }

// pool is one group of machines created (and then removed) concurrently.
type pool struct {
	size     int
	machines []*machineRun
}

// span is the wall time from the first start to the last end.
func span(ms []*machineRun, start, end func(*machineRun) time.Time) time.Duration {
	var first, last time.Time
	for i, m := range ms {
		if i == 0 || start(m).Before(first) {
			first = start(m)
		}
		if end(m).After(last) {
			last = end(m)
		}
	}
	return last.Sub(first)
}

// createPool runs `rancher-machine create` for n machines of one guest
// cluster at once, each in its own store as Rancher's jobs are, and
// records when each started, when the driver logged that Create returns
// and when the command ended.
func createPool(ctx context.Context, sim *simtest.Sim, dir, cluster string, n int) (*pool, error) {
	p := &pool{size: n}
	var wg sync.WaitGroup
	for i := range n {
		m := &machineRun{name: fmt.Sprintf("%s-pool1-%05d", cluster, i)}
		p.machines = append(p.machines, m)
		mdir := filepath.Join(dir, m.name)
		if err := os.MkdirAll(mdir, 0o700); err != nil {
			return nil, err
		}
		ms, err := sim.NewMachines(mdir, cluster)
		if err != nil {
			return nil, err
		}
		ms.Setenv(machineEnv...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			marker := m.name + ": running, address "
			m.createStart = time.Now()
			m.cpu, m.err = runLines(ctx, ms, ms.CreateArgs(m.name), func(at time.Time, line string) {
				if strings.Contains(line, marker) {
					m.returned = at
				}
				m.timeline = append(m.timeline, fmt.Sprintf("%6.0f ms  %s", float64(at.Sub(m.createStart))/float64(time.Millisecond), line))
			})
			m.createEnd = time.Now()
			if m.err == nil && m.returned.IsZero() {
				m.err = fmt.Errorf("create %s: no line %q in the output", m.name, marker)
			}
		}()
	}
	wg.Wait()
	return p, p.err()
}

// removePool runs `rancher-machine rm` for every machine of the pool at
// once.
func removePool(ctx context.Context, sim *simtest.Sim, dir, cluster string, p *pool) error {
	var wg sync.WaitGroup
	for _, m := range p.machines {
		ms, err := sim.NewMachines(filepath.Join(dir, m.name), cluster)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.rmStart = time.Now()
			_, m.err = runLines(ctx, ms, ms.RemoveArgs(m.name), func(time.Time, string) {})
			m.rmEnd = time.Now()
		}()
	}
	wg.Wait()
	return p.err()
}

func (p *pool) err() error {
	for _, m := range p.machines {
		if m.err != nil {
			return m.err
		}
	}
	return nil
}

// runLines runs rancher-machine and hands each output line to onLine with
// the time it was read; the output is kept for the error. It returns the
// CPU time (user and system) of rancher-machine and the children it waited
// for.
func runLines(ctx context.Context, ms *simtest.Machines, args []string, onLine func(time.Time, string)) (time.Duration, error) {
	cmd := ms.Command(ctx, args...)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			onLine(time.Now(), sc.Text())
			out.WriteString(sc.Text() + "\n")
		}
	}()
	err := cmd.Run()
	w.Close()
	<-done
	if err != nil {
		return 0, fmt.Errorf("rancher-machine %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
