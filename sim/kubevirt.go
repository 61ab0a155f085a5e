package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// KubeVirtDir is the state directory's folder of KubeVirt's control plane:
// virt-operator's objects and certificates, the components' kubeconfigs and
// ServiceAccount files.
const KubeVirtDir = "kubevirt"

// kubeVirtRun is KubeVirt's control plane as the simulator runs it: virt-api
// and virt-controller from the bin dir (see sim/kubevirt), each restarted
// as the kubelet restarts a Pod's container.
type kubeVirtRun struct {
	mu         sync.Mutex
	containers []*podContainer
}

// start runs KubeVirt's control plane: bin/kubevirt-install at once, then,
// once kube-apiserver serves (apiReady closed), KubeVirt's CRDs together
// with the rest of virt-operator's objects. It sends the CRDs' outcome on
// crds (then the simulator may create KubeVirt objects), creates the
// KubeVirt CR, starts virt-api and virt-controller, waits until both serve
// and registers virt-api's webhooks and APIServices.
func (k *kubeVirtRun) start(ctx context.Context, c *controlPlane, cfg *rest.Config, apiReady <-chan struct{}, crds chan<- error, log *slog.Logger) error {
	begin := time.Now()
	kv, err := newKubeVirt(c, cfg, log)
	if err == nil {
		err = kv.Generate(ctx)
	}
	if err == nil {
		select {
		case <-apiReady:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		crds <- err
		return err
	}
	configured := make(chan error, 1)
	go func() { configured <- kv.Configure(ctx) }()
	err = kv.InstallCRDs(ctx)
	crds <- err
	if err := errors.Join(err, <-configured); err != nil {
		return err
	}
	log.Debug("KubeVirt's CRDs established and objects created", "after", time.Since(begin).Round(time.Millisecond))
	if err := kv.CreateKubeVirtCR(ctx); err != nil {
		return err
	}
	components, err := kv.Components()
	if err != nil {
		return err
	}
	started := make([]*podContainer, 0, len(components))
	for _, comp := range components {
		pc, err := runPodContainer(comp.Name, func() (*process, error) {
			return startInPod(c.binDir, c.path("logs"), comp.Name, comp.ServiceAccountDir, nil, comp.Args...)
		}, log)
		if err != nil {
			return err
		}
		started = append(started, pc)
		k.mu.Lock()
		k.containers = append(k.containers, pc)
		k.mu.Unlock()
	}
	for i, comp := range components {
		if err := started[i].waitReady(ctx, comp.Ready); err != nil {
			return err
		}
		log.Debug(comp.Name+" ready", "after", time.Since(begin).Round(time.Millisecond))
	}
	log.Debug("virt-api and virt-controller serving", "after", time.Since(begin).Round(time.Millisecond))
	if err := kv.Register(ctx, SystemNamespace); err != nil {
		return err
	}
	log.Debug("KubeVirt's webhooks and subresources APIServices in effect", "after", time.Since(begin).Round(time.Millisecond))
	return nil
}

func newKubeVirt(c *controlPlane, cfg *rest.Config, log *slog.Logger) (*kubevirt.ControlPlane, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return kubevirt.New(kubevirt.Options{
		BinDir: c.binDir, Dir: c.path(KubeVirtDir), Namespace: SystemNamespace,
		Admin: cfg, CACert: c.pki.CACertPEM, Log: log,
	}, ports[0], ports[1])
}

func (k *kubeVirtRun) stop() {
	k.mu.Lock()
	containers := append([]*podContainer(nil), k.containers...)
	k.mu.Unlock()
	for _, c := range containers {
		c.stop(5 * time.Second)
	}
}

// startErr wraps a failure of KubeVirt's start.
func startErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("start KubeVirt's control plane: %w", err)
}
