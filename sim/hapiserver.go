package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/hapiserver"
)

// HarvesterAPIServerDir is the state directory's folder of Harvester's API
// server: its ServiceAccount files, kubeconfig and URLFile.
const HarvesterAPIServerDir = "harvester"

// HarvesterURLFile, in HarvesterAPIServerDir, holds the API server's HTTPS
// URL (https://127.0.0.1:PORT), for `harvester-sim maintenance`.
const HarvesterURLFile = "url"

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
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	if err := createSystemNamespace(startCtx, admin); err != nil {
		return err
	}
	o := hapiserver.Options{Dir: c.path(HarvesterAPIServerDir), Namespace: SystemNamespace, APIServer: c.URL(),
		CACert: c.pki.CACertPEM, Kube: admin.kube, Dyn: admin.dyn, Labels: map[string]string{simLabel: "true"}}
	if err := hapiserver.Prepare(startCtx, o); err != nil {
		return err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := os.WriteFile(filepath.Join(o.Dir, HarvesterURLFile), []byte(url+"\n"), 0o644); err != nil {
		return fmt.Errorf("harvester API server: write its URL: %w", err)
	}
	pc, err := runPodContainer(hapiserver.Binary, func() (*process, error) {
		return startInPod(c.binDir, c.path("logs"), hapiserver.Binary, o.ServiceAccountDir(), o.Args(ports[0], ports[1])...)
	}, log)
	if err != nil {
		return err
	}
	h.set(pc)
	log.Debug("harvester API server started", "url", url, "after", time.Since(begin).Round(time.Millisecond))
	if err := pc.waitStarted(func() error {
		if err := hapiserver.WaitControllers(startCtx, admin.kube, hostName(0)); err != nil {
			return err
		}
		return hapiserver.WaitServing(startCtx, admin.kube, url, hostName(0))
	}); err != nil {
		return err
	}
	log.Debug("Harvester's controllers started, its node API serves", "after", time.Since(begin).Round(time.Millisecond))
	return nil
}
