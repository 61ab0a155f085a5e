package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// driverBinary is the plugin's file name; the kernel's comm keeps its
// first 15 bytes.
const driverBinary = "docker-machine-driver-harvester"

// rssSampler records the largest peak resident size (VmHWM) of any driver
// process seen while it runs, and the CPU time each one used (as last
// seen: up to one interval of a process's CPU may be missed).
type rssSampler struct {
	mu     sync.Mutex
	peakKB int
	ticks  map[string]int // pid -> utime+stime in clock ticks
	stop   chan struct{}
	done   chan struct{}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

func sampleDriverRSS(every time.Duration) *rssSampler {
	s := &rssSampler{ticks: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Base(exe) != driverBinary {
			continue
		}
		kb := statusKB(filepath.Join("/proc", e.Name(), "status"), "VmHWM:")
		ticks := cpuTicks(filepath.Join("/proc", e.Name(), "stat"))
		s.mu.Lock()
		s.peakKB = max(s.peakKB, kb)
		s.ticks[e.Name()] = max(s.ticks[e.Name()], ticks)
		s.mu.Unlock()
	}
}

// Stop ends sampling and returns the peak in MiB and the CPU time of all
// driver processes seen.
func (s *rssSampler) Stop() (float64, time.Duration) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, t := range s.ticks {
		total += t
	}
	return float64(s.peakKB) / 1024, time.Duration(total) * time.Second / clockTicks
}

// statFields are the fields of /proc/PID/stat after the command name
// (field 2, which may hold spaces and parentheses): index 0 is field 3
// (state); nil when it cannot be read.
func statFields(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(data)[i+1:])
	if len(f) < 20 {
		return nil
	}
	return f
}

// statField is field n (1-based, as proc(5) numbers them) of fields read
// by statFields, as a number; 0 when absent.
func statField(f []string, n int) int {
	if len(f) < n-2 {
		return 0
	}
	v, _ := strconv.Atoi(f[n-3])
	return v
}

// cpuTicks is utime + stime of /proc/PID/stat (fields 14 and 15).
func cpuTicks(path string) int {
	own, _ := statTicks(path)
	return own
}

// statTicks is the process's own CPU (utime + stime, fields 14 and 15)
// and that of the children it reaped (cutime + cstime, 16 and 17), in
// clock ticks.
func statTicks(path string) (own, children int) {
	f := statFields(path)
	return statField(f, 14) + statField(f, 15), statField(f, 16) + statField(f, 17)
}

// statusKB reads one "Key: N kB" line of /proc/PID/status.
func statusKB(path, key string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == key {
			kb, _ := strconv.Atoi(fields[1])
			return kb
		}
	}
	return 0
}

// startupToRPC starts the plugin as rancher-machine does (the plugin
// token in its environment), reads the address it prints and times until
// its RPC server (net/rpc over HTTP, as the plugin serves it) answers
// GetVersion; then closes it over RPC.
func startupToRPC(ctx context.Context, bin string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "MACHINE_PLUGIN_TOKEN=42")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("%s printed no address", bin)
	}
	client, err := rpc.DialHTTP("tcp", strings.TrimSpace(sc.Text()))
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("dial the plugin: %w", err)
	}
	defer client.Close()
	var version int
	if err := client.Call("RPCServerDriver.GetVersion", &struct{}{}, &version); err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("GetVersion: %w", err)
	}
	took := time.Since(start)
	_ = client.Call("RPCServerDriver.Close", &struct{}{}, &struct{}{})
	return took, nil
}

// strippedSize builds the driver as a release would, stripped, and
// returns its size in MiB.
func strippedSize(ctx context.Context, root, dir string) (float64, error) {
	out := filepath.Join(dir, driverBinary+"-stripped")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/"+driverBinary)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build stripped driver: %w\n%s", err, b)
	}
	info, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return float64(info.Size()) / (1 << 20), nil
}
