// Package sim runs a simulated Harvester: a real etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, KubeVirt's own virt-api and
// virt-controller (sim/kubevirt), Harvester's own admission webhook
// (sim/hwebhook) and API server with its controllers (sim/hapiserver),
// the Harvester custom resources, fixtures,
// and controllers that play the hosts and Harvester.
package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/sim/guestnet"
	"github.com/harvester-kit/harvester-machine/sim/guests"
	"github.com/harvester-kit/harvester-machine/sim/kubevip"
	"github.com/harvester-kit/harvester-machine/sim/statefile"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// Files the simulator writes into its state directory.
const (
	KubeconfigFile = "kubeconfig"
	ReadyFile      = "ready"
	PIDFile        = "sim.pid"
	// APIServerPIDFile holds the pid of the kube-apiserver that is serving.
	APIServerPIDFile = "apiserver.pid"
	SSHKeyFile       = "sim-key"
)

// Options configure a simulator run.
type Options struct {
	StateDir string
	BinDir   string // where etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KubeVirt's tools, harvester-webhook and harvester are
	Hosts    int
	Zones    int

	ScheduleDelay, BootDelay, IPDelay time.Duration
	// MigrationDuration is how long a live migration's transfer runs.
	MigrationDuration time.Duration
	StartTimeout      time.Duration
	// GuestClusters starts a control plane for each guest cluster a VM is
	// labelled with, and lets running VMs join it as Nodes.
	GuestClusters bool
	// AuditLog, when set, is the file kube-apiserver logs every request
	// to (audit level Metadata, JSON lines), for counting API requests.
	AuditLog string
	// Ledger, when set, is the file the simulator appends its line to when
	// it stops (see LedgerEnv).
	Ledger string
	// GuestInterface, when set, is the interface running guests' addresses
	// go on, each answering SSH (sim/guestnet).
	GuestInterface string
	// NodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period: how long after a host's last Lease
	// renewal its Node turns Ready Unknown (DefaultNodeMonitorGracePeriod
	// when 0).
	NodeMonitorGracePeriod time.Duration
	Log                    *slog.Logger
}

// DefaultNodeMonitorGracePeriod is kube-controller-manager's own default.
const DefaultNodeMonitorGracePeriod = tunables.DefaultNodeMonitorGracePeriod

// restartDeadline is how long a restarted kube-apiserver may take to serve
// (fault restart-apiserver) before the simulator gives up: it loads every
// CRD again, KubeVirt's large ones among them, while every client relists
// at once; on a busy 2-core machine that took over a minute.
const restartDeadline = 3 * time.Minute

// timing is what the options start the controllers with (the tunables'
// start values).
func (o Options) timing() tunables.Values {
	grace := o.NodeMonitorGracePeriod
	if grace == 0 {
		grace = DefaultNodeMonitorGracePeriod
	}
	return tunables.Values{NodeMonitorGracePeriod: grace, MigrationDuration: o.MigrationDuration,
		ScheduleDelay: o.ScheduleDelay, BootDelay: o.BootDelay, IPDelay: o.IPDelay}
}

// Validate returns every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.StateDir == "" {
		errs = append(errs, errors.New("--state-dir: required: a directory for the simulator's data, kubeconfig and ready file"))
	}
	if o.Hosts < 1 || o.Hosts > 64 {
		errs = append(errs, fmt.Errorf("--hosts: %d is out of range: use 1 to 64", o.Hosts))
	}
	if o.Zones < 1 || o.Zones > o.Hosts {
		errs = append(errs, fmt.Errorf("--zones: %d is out of range: use 1 to the host count (%d)", o.Zones, o.Hosts))
	}
	if err := o.timing().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run starts the simulated Harvester, writes the kubeconfig and the ready
// file, and serves until ctx ends or a component dies. Every run starts clean:
// the state directory's previous cluster data is removed first. SIGUSR1
// restarts kube-apiserver and SIGUSR2 freezes it (faults for reliability tests).
func Run(ctx context.Context, o Options) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	o.NodeMonitorGracePeriod = o.timing().NodeMonitorGracePeriod
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	if err := prepareStateDir(o.StateDir); err != nil {
		return err
	}
	defer func() {
		os.Remove(filepath.Join(o.StateDir, ReadyFile))
		os.Remove(filepath.Join(o.StateDir, PIDFile))
	}()

	cp, err := newControlPlane(o.BinDir, o.StateDir, o.AuditLog)
	if err != nil {
		return err
	}
	cp.countRequests = o.Ledger != ""
	ready := false
	defer func() { // after cp.stop, which counts the requests
		e := ledgerEntry{start: start, stop: time.Now(), ready: ready, requests: cp.requestsServed, counted: !cp.requestsIncomplete}
		if err := appendLedger(o.Ledger, e); err != nil {
			log.Warn("write the ledger", "err", err)
		}
	}()
	defer cp.stop(ctx)

	cfg, err := clientcmd.NewDefaultClientConfig(*cp.adminKubeconfig(), nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("load admin kubeconfig: %w", err)
	}
	startCtx, cancelStart := context.WithTimeout(ctx, o.StartTimeout)
	defer cancelStart()
	// KubeVirt's control plane starts alongside the rest; the simulator's
	// controllers and webhook need its CRDs first.
	kv := &kubeVirtRun{}
	defer kv.stop()
	apiReady := make(chan struct{})
	kvCRDs, kvDone := make(chan error, 1), make(chan error, 1)
	go func() { kvDone <- kv.start(startCtx, cp, cfg, apiReady, kvCRDs, log.With("component", "kubevirt")) }()
	admin, err := newAdminClients(cfg)
	if err != nil {
		return err
	}
	// Harvester's webhook starts as soon as its CRDs are there: it waits
	// 15 s before registering, which overlaps the rest of the start.
	hw := &harvesterWebhookRun{}
	defer hw.stop()
	crdsReady, hwDone := make(chan struct{}), make(chan error, 1)
	go func() {
		hwDone <- hw.start(ctx, startCtx, cp, admin, apiReady, crdsReady, log.With("component", "harvester-webhook"))
	}()
	// Harvester's API server starts once every CRD is there, alongside the
	// rest: it installs its own CRDs, then waits for its Lease.
	ha := &harvesterAPIServerRun{}
	defer ha.stop()
	haDone := make(chan error, 1)
	go func() { haDone <- ha.start(startCtx, cp, admin, crdsReady, log.With("component", "harvester")) }()
	if err := cp.startEtcd(startCtx); err != nil {
		return err
	}
	log.Debug("etcd ready", "after", time.Since(start).Round(time.Millisecond))
	if err := cp.startAPIServer(startCtx); err != nil {
		return err
	}
	close(apiReady)
	log.Info("kube-apiserver ready", "url", cp.URL(), "after", time.Since(start).Round(time.Millisecond))

	kcmDone := make(chan error, 1)
	go func() { kcmDone <- cp.startControllerManager(startCtx, o.NodeMonitorGracePeriod) }()
	schedDone := make(chan error, 1)
	go func() { schedDone <- cp.startScheduler(startCtx) }()

	if err := installCRDs(startCtx, admin.ext); err != nil {
		return err
	}
	kvCRDsErr := make(chan error, 1)
	go func() {
		err := <-kvCRDs
		if err == nil {
			close(crdsReady)
		}
		kvCRDsErr <- err
	}()
	if err := install(startCtx, admin, o); err != nil {
		return err
	}
	if err := <-kvCRDsErr; err != nil {
		return startErr(err)
	}
	log.Debug("CRDs and fixtures installed", "after", time.Since(start).Round(time.Millisecond))
	runCtx, stopControllers := context.WithCancel(ctx)
	defer stopControllers()
	var guestNet *guestnet.Network
	if o.GuestInterface != "" {
		if guestNet, err = guestnet.New(o.GuestInterface, log.With("component", "guestnet")); err != nil {
			return err
		}
		defer func() {
			if err := guestNet.Close(); err != nil {
				log.Warn("take guests off the network", "err", err)
			}
		}()
	}
	kcmGrace := make(chan graceRequest)
	err = controllers.Start(runCtx, cfg, controllers.Options{
		Timing: o.timing(), SetNodeGrace: graceSetter(kcmGrace),
		Log:          log.With("component", "controllers"),
		GuestNetwork: guestNet,
		KubeletCert:  cp.pki.kubeletCert,
	})
	if err != nil {
		return fmt.Errorf("start simulated controllers: %w", err)
	}
	if o.GuestClusters {
		var kubeVIP *kubevip.Runner
		if guestNet != nil { // kube-vip's nodes join the guest network
			if kubeVIP, err = kubevip.NewRunner(o.BinDir, log.With("component", "kube-vip")); err != nil {
				return err
			}
		}
		planes := newGuestPlanes(cp, kubeVIP, log.With("component", "guests"))
		defer planes.stopAll()
		if err := guests.Start(runCtx, cfg, planes, log.With("component", "guests")); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := waitFixturesReady(startCtx, dyn); err != nil {
		return err
	}
	log.Debug("fixtures ready", "after", time.Since(start).Round(time.Millisecond))
	if err := <-kcmDone; err != nil {
		return err
	}
	if err := <-schedDone; err != nil {
		return err
	}
	if err := waitViewAggregated(startCtx, admin.kube); err != nil {
		return err
	}
	if err := <-kvDone; err != nil {
		return startErr(err)
	}
	log.Debug("KubeVirt's virt-api and virt-controller ready", "after", time.Since(start).Round(time.Millisecond))
	if err := <-hwDone; err != nil {
		return fmt.Errorf("start Harvester's webhook: %w", err)
	}
	log.Debug("Harvester's webhook in effect", "after", time.Since(start).Round(time.Millisecond))
	if err := <-haDone; err != nil {
		return fmt.Errorf("start Harvester's API server: %w", err)
	}
	log.Debug("Harvester's controllers running", "after", time.Since(start).Round(time.Millisecond))
	log.Debug("kube-controller-manager and kube-scheduler ready", "after", time.Since(start).Round(time.Millisecond))
	if err := statefile.Write(filepath.Join(o.StateDir, ReadyFile), []byte(cp.URL()+"\n")); err != nil {
		return fmt.Errorf("write ready file: %w", err)
	}
	ready = true
	log.Info("simulated Harvester ready", "kubeconfig", filepath.Join(o.StateDir, KubeconfigFile), "after", time.Since(start).Round(time.Millisecond))
	return serve(ctx, cp, kcmGrace, log)
}

// serve waits for the end, restarting kube-apiserver on SIGUSR1 and
// freezing it on SIGUSR2 (see FreezeAPIServer), and fails when a component
// dies on its own.
func serve(ctx context.Context, cp *controlPlane, kcmGrace <-chan graceRequest, log *slog.Logger) error {
	restart := make(chan os.Signal, 1)
	signal.Notify(restart, syscall.SIGUSR1)
	defer signal.Stop(restart)
	freeze := make(chan os.Signal, 1)
	signal.Notify(freeze, syscall.SIGUSR2)
	defer signal.Stop(freeze)
	for {
		select {
		case <-freeze:
			token, d, err := readFreezeRequest(cp.dir)
			if err == nil {
				err = cp.freezeAPIServer(token, d)
			}
			if err != nil {
				log.Error("fault: freeze kube-apiserver", "err", err)
				continue
			}
			log.Info("fault: kube-apiserver frozen (SIGSTOP)", "for", d)
		case <-ctx.Done():
			log.Info("stopping simulated Harvester")
			return nil
		case <-restart:
			log.Info("fault: restarting kube-apiserver")
			rctx, cancel := context.WithTimeout(ctx, restartDeadline)
			err := cp.restartAPIServer(rctx)
			cancel()
			if err != nil {
				return fmt.Errorf("restart kube-apiserver: %w", err)
			}
			log.Info("kube-apiserver restarted")
		case req := <-kcmGrace:
			rctx, cancel := context.WithTimeout(ctx, kcmRestartTimeout)
			err := cp.restartControllerManager(rctx, req.grace)
			cancel()
			req.done <- err
			if err == nil {
				log.Info("tunables: kube-controller-manager started again", "node-monitor-grace-period", req.grace)
			}
		case <-cp.etcd.done:
			return fmt.Errorf("etcd exited: %w", cp.etcd.err)
		case <-cp.apiserver.done:
			return fmt.Errorf("kube-apiserver exited: %w", cp.apiserver.err)
		case <-cp.kcm.done:
			return fmt.Errorf("kube-controller-manager exited: %w", cp.kcm.err)
		case <-cp.scheduler.done:
			return fmt.Errorf("kube-scheduler exited: %w", cp.scheduler.err)
		}
	}
}

// adminClients reach the simulator's kube-apiserver as its administrator;
// made once and shared by the start-up steps.
type adminClients struct {
	ext  apiextclient.Interface
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func newAdminClients(cfg *rest.Config) (adminClients, error) {
	var c adminClients
	var err error
	// The start-up creates ~40 CRDs and waits for each: client-go's
	// default 5 requests a second would make that 15 s.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	if c.ext, err = apiextclient.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("admin clients: %w", err)
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("admin clients: %w", err)
	}
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return c, fmt.Errorf("admin clients: %w", err)
	}
	return c, nil
}

// install creates what the simulator serves besides its CRDs (installed
// first): namespaces, RBAC, hosts, the SSH key and Harvester fixtures.
func install(ctx context.Context, admin adminClients, o Options) error {
	kube, dyn := admin.kube, admin.dyn
	if err := installCore(ctx, kube, o.Hosts, o.Zones); err != nil {
		return err
	}
	privateKey, publicKey, err := newSSHKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.StateDir, SSHKeyFile), privateKey, 0o600); err != nil {
		return fmt.Errorf("write fixture ssh key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.StateDir, SSHKeyFile+".pub"), []byte(publicKey), 0o644); err != nil {
		return fmt.Errorf("write fixture ssh key: %w", err)
	}
	if err := installHarvesterFixtures(ctx, dyn, publicKey); err != nil {
		return err
	}
	hosts := make([]string, o.Hosts)
	for i := range hosts {
		hosts[i] = hostName(i)
	}
	return installRancherFixtures(ctx, kube, dyn, hosts)
}

// prepareStateDir refuses a directory a live simulator is using, then removes
// what an earlier run left so this one starts clean.
func prepareStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, PIDFile)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("--state-dir %s: a simulator (pid %d) is already running there: stop it or pick another directory", dir, pid)
		}
	}
	for _, name := range []string{"etcd", "pki", "logs", KubeVirtDir, HarvesterWebhookDir, HarvesterAPIServerDir, GuestsDir, KubeconfigFile, ReadyFile, APIServerPIDFile, freezeRequestFile, freezeAnswerFile, SSHKeyFile, SSHKeyFile + ".pub"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("clean state dir: %w", err)
		}
	}
	return statefile.Write(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"))
}
