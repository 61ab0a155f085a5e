package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// User agents the driver and harvester-bootstrap send (internal/kubeapi).
const (
	driverAgent    = "docker-machine-driver-harvester"
	bootstrapAgent = "harvester-bootstrap"
)

// Options are the benchmark's settings; every one is stated in the report.
type Options struct {
	// ScheduleDelay, BootDelay and IPDelay are the simulator's VMI timings:
	// their sum is the boot-to-address time overhead is measured against.
	ScheduleDelay, BootDelay, IPDelay time.Duration
	SingleRuns                        int   // machines created one after another (pool of 1)
	Pools                             []int // larger pools, created concurrently
	StartupRuns                       int   // driver starts timed to RPC
	Root                              string
	DocPath, PlotPath                 string
	Log                               io.Writer
	SimArgs                           []string      // more harvester-sim flags (the guest network, test/harness)
	NamespaceVMIs                     int           // VMIs seeded for the create-cost-by-namespace-size rows (0: none)
	MigrationDuration                 time.Duration // simulator: a live migration's transfer (phase Running to Succeeded)
	SkipDay2                          bool          // leave out the day-2 measurement (migrations, maintenance)
}

// BootToAddress is the simulator's configured time from a VMI's creation
// to its address.
func (o Options) BootToAddress() time.Duration { return o.ScheduleDelay + o.BootDelay + o.IPDelay }

// Result is everything measured.
type Result struct {
	Opts          Options
	Pools         []*pool // pool-of-1 runs first, each a pool of its own
	CreateReqs    map[int]Requests
	RemoveReqs    map[int]Requests
	Startup       Summary
	PeakRSSMiB    float64
	DriverCPU     time.Duration // CPU of the driver processes of the single machines (create and remove)
	StrippedMiB   float64
	KubeconfigDur time.Duration
	KubeconfigReq Requests
	Scale         *ScaleResult // nil: not measured
	Day2          *Day2Result
	Took          time.Duration
}

// Run runs the benchmark against a fresh simulator.
func Run(ctx context.Context, o Options) (_ *Result, err error) {
	begin := time.Now()
	dir, err := os.MkdirTemp("", "harvester-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := becomeSubreaper(); err != nil {
		return nil, err
	}
	audit := filepath.Join(dir, "audit.log")
	logf(o, "starting the simulator (boot to address %s)", o.BootToAddress())
	sim, err := simtest.Start(ctx, simtest.Options{Args: append([]string{
		"--schedule-delay=" + o.ScheduleDelay.String(), "--boot-delay=" + o.BootDelay.String(),
		"--ip-delay=" + o.IPDelay.String(), "--migration-duration=" + o.MigrationDuration.String(), "--audit-log=" + audit,
	}, o.SimArgs...)})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, sim.Stop()) }()
	cfg, err := sim.RESTConfig()
	if err != nil {
		return nil, err
	}
	virt, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &Result{Opts: o, CreateReqs: map[int]Requests{}, RemoveReqs: map[int]Requests{}}
	log := &auditLog{path: audit}
	rss := sampleDriverRSS(10 * time.Millisecond)
	sizes := make([]int, 0, o.SingleRuns+len(o.Pools))
	for range o.SingleRuns {
		sizes = append(sizes, 1)
	}
	sizes = append(sizes, o.Pools...)
	for i, n := range sizes {
		if i == o.SingleRuns {
			r.PeakRSSMiB, r.DriverCPU = rss.Stop() // of single creates and removes
		}
		p, err := r.runPool(ctx, sim, virt, log, dir, fmt.Sprintf("b%d-%d", n, i), n)
		if err != nil {
			return nil, err
		}
		r.Pools = append(r.Pools, p)
	}
	if o.SingleRuns == len(sizes) {
		r.PeakRSSMiB, r.DriverCPU = rss.Stop()
	}
	if err := r.measureScale(ctx, sim, virt, log, dir); err != nil {
		return nil, err
	}
	if !o.SkipDay2 {
		if err := r.measureDay2(ctx, sim, kube, virt, dir); err != nil {
			return nil, err
		}
	}
	if err := r.measureProcess(ctx, dir); err != nil {
		return nil, err
	}
	if err := r.measureKubeconfig(ctx, sim, log, dir); err != nil {
		return nil, err
	}
	r.Took = time.Since(begin)
	return r, nil
}

func logf(o Options, format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
	}
}

// runPool creates n machines at once, reads when the simulator gave each
// its address, removes them at once, and counts the driver's requests of
// each phase (summed over pools of the same size).
func (r *Result) runPool(ctx context.Context, sim *simtest.Sim, virt kubevirt.Interface, log *auditLog, dir, cluster string, n int) (*pool, error) {
	logf(r.Opts, "pool of %d: create", n)
	if err := log.mark(); err != nil {
		return nil, err
	}
	p, err := createPool(ctx, sim, dir, cluster, n)
	if err != nil {
		return nil, err
	}
	if err := addressTimes(ctx, virt, p); err != nil {
		return nil, err
	}
	created, err := log.since(driverAgent)
	if err != nil {
		return nil, err
	}
	logf(r.Opts, "pool of %d: remove", n)
	if err := removePool(ctx, sim, dir, cluster, p); err != nil {
		return nil, err
	}
	removed, err := log.since(driverAgent)
	if err != nil {
		return nil, err
	}
	r.CreateReqs[n] = merge(r.CreateReqs[n], created)
	r.RemoveReqs[n] = merge(r.RemoveReqs[n], removed)
	return p, nil
}

func merge(into, more Requests) Requests {
	if into == nil {
		into = Requests{}
	}
	for k, v := range more {
		into[k] += v
	}
	return into
}

// addressTimes reads the simulator's address-reported-at annotation of
// each machine's VMI.
func addressTimes(ctx context.Context, virt kubevirt.Interface, p *pool) error {
	for _, m := range p.machines {
		vmi, err := virt.KubevirtV1().VirtualMachineInstances("default").Get(ctx, m.name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read VMI %s: %w", m.name, err)
		}
		at, err := time.Parse(time.RFC3339Nano, vmi.Annotations[controllers.AnnAddressReportedAt])
		if err != nil {
			return fmt.Errorf("VMI %s: annotation %s: %w", m.name, controllers.AnnAddressReportedAt, err)
		}
		m.addressAt = at
	}
	return nil
}

// measureProcess times the driver's start-up to RPC and builds it stripped.
func (r *Result) measureProcess(ctx context.Context, dir string) error {
	bin, err := simtest.Bin(driverBinary)
	if err != nil {
		return err
	}
	logf(r.Opts, "driver start-up to RPC, %d runs", r.Opts.StartupRuns)
	var samples []time.Duration
	for range r.Opts.StartupRuns {
		d, err := startupToRPC(ctx, bin)
		if err != nil {
			return err
		}
		samples = append(samples, d)
	}
	r.Startup = Summarize(samples)
	r.StrippedMiB, err = strippedSize(ctx, r.Opts.Root, dir)
	return err
}

// measureKubeconfig runs `harvester-bootstrap kubeconfig` once, end to end.
func (r *Result) measureKubeconfig(ctx context.Context, sim *simtest.Sim, log *auditLog, dir string) error {
	bin, err := simtest.Bin("harvester-bootstrap")
	if err != nil {
		return err
	}
	if err := log.mark(); err != nil {
		return err
	}
	logf(r.Opts, "harvester-bootstrap kubeconfig")
	out := filepath.Join(dir, "cloud-config")
	cmd := exec.CommandContext(ctx, bin, "kubeconfig", "--kubeconfig", sim.Kubeconfig, "--cluster-name", "bench-kubeconfig", "--namespace", "default", "-o", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("harvester-bootstrap kubeconfig: %w\n%s", err, stderr.String())
	}
	r.KubeconfigDur = time.Since(start)
	r.KubeconfigReq, err = log.since(bootstrapAgent)
	return err
}

// auditLog reads the audit log from a mark on.
type auditLog struct {
	path   string
	offset int64
}

func (a *auditLog) size() (int64, error) {
	info, err := os.Stat(a.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func (a *auditLog) mark() error {
	var err error
	a.offset, err = a.settled()
	return err
}

// settled returns the log's size once it has not grown for half a second:
// a watch is logged when it ends, just after its client exits.
func (a *auditLog) settled() (int64, error) {
	last, err := a.size()
	for err == nil {
		time.Sleep(500 * time.Millisecond)
		var now int64
		if now, err = a.size(); err == nil && now == last {
			return now, nil
		}
		last = now
	}
	return 0, err
}

// since counts agent's requests logged after the mark, and marks anew.
func (a *auditLog) since(agent string) (Requests, error) {
	end, err := a.settled()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reqs, err := CountRequests(io.NewSectionReader(f, a.offset, end-a.offset), agent)
	a.offset = end
	return reqs, err
}

// plotColors are the plot's series colours: p50, p95, max.
var plotColors = []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {214, 39, 40, 255}}

func poolLabel(n int) string { return "pool of " + strconv.Itoa(n) }

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
