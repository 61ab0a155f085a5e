package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	end                    *runEnd         // how the create ended: rancher-machine's and its plugins' exits and CPU
	closeToExit            []time.Duration // per plugin process: its Close to its exit
	timeline               []event         // the create's output, each line with the time it was read
	err                    error
}

// event is a line of a create's timeline.
type event struct {
	at   time.Time
	text string
}

func (m *machineRun) wait() time.Duration          { return m.returned.Sub(m.addressAt) }
func (m *machineRun) addressToExit() time.Duration { return m.end.exited.Sub(m.addressAt) }
func (m *machineRun) create() time.Duration        { return m.createEnd.Sub(m.createStart) }
func (m *machineRun) removing() time.Duration      { return m.rmEnd.Sub(m.rmStart) }

// timelineText is the timeline, each line with its time since the start.
func (m *machineRun) timelineText() string {
	var b strings.Builder
	for _, e := range m.timeline {
		fmt.Fprintf(&b, "%6.0f ms  %s\n", float64(e.at.Sub(m.createStart))/float64(time.Millisecond), e.text)
	}
	return b.String()
}

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
			args := append([]string{debugFlag}, ms.CreateArgs(m.name)...)
			m.end, m.err = runLines(ctx, ms, args, func(at time.Time, line string) {
				if strings.Contains(line, marker) {
					m.returned = at
				}
				m.timeline = append(m.timeline, event{at, line})
			})
			m.createEnd = time.Now()
			if m.err == nil && m.returned.IsZero() {
				m.err = fmt.Errorf("create %s: no line %q in the output", m.name, marker)
			}
			if m.err == nil {
				m.closeToExit, m.err = m.end.closeToExit(m.name)
				m.timeline = append(m.timeline, m.end.events()...)
				slices.SortStableFunc(m.timeline, func(a, b event) int { return a.at.Compare(b.at) })
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

// debugFlag makes rancher-machine log each RPC call it makes, Close
// included (global flag: before the command).
const debugFlag = "--debug"

// runLines runs rancher-machine and hands each output line to onLine with
// the time it was read; the output is kept for the error. It returns how
// the run ended: when rancher-machine and each of its plugin processes
// exited, and their CPU.
func runLines(ctx context.Context, ms *simtest.Machines, args []string, onLine func(time.Time, string)) (*runEnd, error) {
	cmd := ms.Command(ctx, args...)
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	end := &runEnd{closes: map[string]time.Time{}}
	var out strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			at := time.Now()
			end.noteClose(at, sc.Text())
			onLine(at, sc.Text())
			out.WriteString(sc.Text() + "\n")
		}
	}()
	err := cmd.Start()
	if err == nil {
		err = track(cmd.Process.Pid, end).finish(ctx, cmd.Wait)
	}
	w.Close()
	<-done
	if err != nil {
		return nil, fmt.Errorf("rancher-machine %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return end, nil
}
