package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/sim/kubevip"
	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// GuestsDir holds one directory per running guest cluster, with its
// kubeconfig (GuestsDir/<cluster>/kubeconfig) and API server log.
const GuestsDir = "guests"

// guestPlanes starts a guest cluster's control plane on demand: a real
// kube-apiserver that keeps its data in the simulator's etcd under a
// prefix of its own. It implements guests.ControlPlanes.
type guestPlanes struct {
	cp      *controlPlane
	log     *slog.Logger
	kubeVIP *kubevip.Runner // nil: kube-vip is not run (no guest network)

	mu      sync.Mutex
	running map[string]*guestPlane
}

type guestPlane struct {
	proc *process
	cfg  *rest.Config
}

func newGuestPlanes(cp *controlPlane, kubeVIP *kubevip.Runner, log *slog.Logger) *guestPlanes {
	return &guestPlanes{cp: cp, kubeVIP: kubeVIP, log: log, running: map[string]*guestPlane{}}
}

func (g *guestPlanes) dir(cluster string) string { return g.cp.path(GuestsDir, cluster) }

// Start returns the guest's API server, starting it first if it is not
// running. Every start gets a fresh etcd prefix: a guest cluster that comes
// back after all its VMs were deleted starts empty, as a new cluster would.
func (g *guestPlanes) Start(ctx context.Context, cluster string) (*rest.Config, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.running[cluster]; p != nil {
		if !p.proc.ended() {
			return rest.CopyConfig(p.cfg), nil
		}
		delete(g.running, cluster)
	}
	start := time.Now()
	dir := g.dir(cluster)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("guest cluster %s: %w", cluster, err)
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	prefix := "/guests/" + cluster + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	proc, err := startProcess(g.cp.binDir, dir, "kube-apiserver", g.cp.apiServerArgs(ports[0], "--etcd-prefix="+prefix)...)
	if err != nil {
		return nil, fmt.Errorf("guest cluster %s: %w", cluster, err)
	}
	url := "https://" + hostPort(ports[0])
	client, err := g.cp.adminHTTPClient()
	if err != nil {
		proc.stop(time.Second)
		return nil, err
	}
	err = proc.waitUntil(ctx, "guest kube-apiserver", func(ctx context.Context) error { return httpOK(ctx, client, url+"/readyz") })
	if err != nil {
		proc.stop(5 * time.Second)
		return nil, fmt.Errorf("guest cluster %s: %w", cluster, err)
	}
	kc := g.cp.kubeconfigFor(cluster, url)
	if err := statefile.WriteKubeconfig(filepath.Join(dir, KubeconfigFile), *kc); err != nil {
		proc.stop(5 * time.Second)
		return nil, fmt.Errorf("guest cluster %s: %w", cluster, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		proc.stop(5 * time.Second)
		return nil, err
	}
	g.running[cluster] = &guestPlane{proc: proc, cfg: cfg}
	if g.kubeVIP != nil {
		if err := g.kubeVIP.Start(ctx, cluster, dir, rest.CopyConfig(cfg)); err != nil {
			g.log.Warn("kube-vip not run", "cluster", cluster, "err", err)
		}
	}
	g.log.Info("guest cluster control plane started", "cluster", cluster, "url", url, "after", time.Since(start).Round(time.Millisecond))
	return rest.CopyConfig(cfg), nil
}

// Stop ends the guest's API server and removes its directory.
func (g *guestPlanes) Stop(cluster string) {
	if g.kubeVIP != nil {
		g.kubeVIP.Stop(cluster)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.running[cluster]; p != nil {
		p.proc.stop(10 * time.Second)
		delete(g.running, cluster)
		g.log.Info("guest cluster control plane stopped", "cluster", cluster)
	}
	_ = os.RemoveAll(g.dir(cluster))
}

// stopAll ends every guest's kube-vip and API server.
func (g *guestPlanes) stopAll() {
	if g.kubeVIP != nil {
		g.kubeVIP.StopAll()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, p := range g.running {
		p.proc.stop(10 * time.Second)
		delete(g.running, name)
	}
}
