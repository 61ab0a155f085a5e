package sim

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/hapiserver"
	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// HarvesterAPIServerDir is the state directory's folder of Harvester's API
// server: its ServiceAccount files, kubeconfig and URLFile.
const HarvesterAPIServerDir = "harvester"

// HarvesterURLFile, in HarvesterAPIServerDir, holds the API server's HTTPS
// URL (https://127.0.0.1:PORT), for `harvester-sim maintenance`; each
// start of the API server writes it anew.
const HarvesterURLFile = "url"

// maxPortAttempts is how many times the API server is started on fresh
// ports when one was taken before it listened.
const maxPortAttempts = 3

// harvesterAPIServerRun is Harvester's API server as the simulator runs it
// (see sim/hapiserver), restarted as the kubelet restarts a Pod's
// container: its controllers exit when they lose their Lease (a
// kube-apiserver away longer than the renew deadline), and the finalizers
// they put on VMs, VM instances, PVCs and Nodes need them back.
type harvesterAPIServerRun struct{ podRun }

// start runs bin/harvester once kube-apiserver serves (apiReady) and
// every CRD the simulator installs is established (crds): it creates what
// the API server reads of a cluster's other components and its Pod files,
// starts it, and waits until it holds its Lease and its controllers have
// started (a finalizer of theirs on the first host).
func (h *harvesterAPIServerRun) start(startCtx context.Context, c *controlPlane, admin adminClients, crds <-chan struct{}, log *slog.Logger) error {
	begin := time.Now()
	select {
	case <-crds:
	case <-startCtx.Done():
		return startCtx.Err()
	}
	if err := createSystemNamespace(startCtx, admin); err != nil {
		return err
	}
	o := hapiserver.Options{Dir: c.path(HarvesterAPIServerDir), Namespace: SystemNamespace, APIServer: c.URL(),
		CACert: c.pki.CACertPEM, Kube: admin.kube, Dyn: admin.dyn, Labels: map[string]string{simLabel: "true"}}
	if err := hapiserver.Prepare(startCtx, o); err != nil {
		return err
	}
	var url atomic.Value // the current process's HTTPS URL
	pc, err := runPodContainer(hapiserver.Binary, func() (*process, error) {
		// Fresh ports at every start: the API server binds them only
		// after its start-up, and another simulator may take a port
		// meanwhile.
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		u := "https://127.0.0.1:" + strconv.Itoa(ports[1])
		if err := statefile.Write(filepath.Join(o.Dir, HarvesterURLFile), []byte(u+"\n")); err != nil {
			return nil, fmt.Errorf("harvester API server: write its URL: %w", err)
		}
		url.Store(u)
		return startInPod(c.binDir, c.path("logs"), hapiserver.Binary, o.ServiceAccountDir(), hapiserver.Env(), o.Args(ports[0], ports[1])...)
	}, log)
	if err != nil {
		return err
	}
	h.set(pc)
	log.Debug("harvester API server started", "url", url.Load(), "after", time.Since(begin).Round(time.Millisecond))
	started := func() error {
		if err := hapiserver.WaitControllers(startCtx, admin.kube, hostName(0)); err != nil {
			return err
		}
		return hapiserver.WaitServing(startCtx, admin.kube, url.Load().(string), hostName(0))
	}
	for attempt := 1; ; attempt++ {
		p := pc.current()
		err := pc.waitStarted(started)
		if err == nil {
			break
		}
		if attempt == maxPortAttempts || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		log.Warn("harvester API server: its port was taken before it listened; started again on other ports", "err", err)
		if err := pc.waitRestarted(startCtx, p); err != nil {
			return err
		}
	}
	log.Debug("Harvester's controllers started, its node API serves", "after", time.Since(begin).Round(time.Millisecond))
	return nil
}
