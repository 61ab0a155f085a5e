// Package kubevirt runs KubeVirt v1.7.0's own control plane for the
// simulated Harvester: virt-api and virt-controller (bin/, built from
// KubeVirt's module by test/tools/build.sh) with what virt-operator would
// give them. bin/kubevirt-install writes the objects from KubeVirt's
// install-strategy code (CRDs, RBAC, certificates, webhook configurations,
// the subresources APIServices); this package applies them, creates
// Harvester's KubeVirt CR with the status virt-operator writes, and gives
// each component its ServiceAccount's token and namespace file as a Pod
// would have them. The simulator (package sim) starts the processes.
package kubevirt

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Version is the KubeVirt release the tools are built from (test/tools
// checks it against kubevirt.io/api in go.mod).
const Version = "v1.7.0"

// LauncherImage is the virt-launcher image Harvester v1.8.1 runs
// (deploy/charts/harvester/values.yaml, kubevirt-operator.containers.launcher):
// virt-controller renders it into every virt-launcher Pod.
const LauncherImage = "registry.suse.com/suse/sles/15.7/virt-launcher:1.7.0-150700.3.21.1"

// The binaries under the simulator's --bin-dir.
const (
	VirtAPI        = "virt-api"
	VirtController = "virt-controller"
	Install        = "kubevirt-install"
)

// The ServiceAccounts the components run as (virt-operator's install
// strategy names them).
const (
	apiServiceAccount        = "kubevirt-apiserver"
	controllerServiceAccount = "kubevirt-controller"
)

// Options say where KubeVirt's control plane runs.
type Options struct {
	BinDir    string       // kubevirt-install, virt-api, virt-controller
	Dir       string       // its files: objects/, pki/, ServiceAccounts, kubeconfigs
	Namespace string       // KubeVirt's install namespace: Harvester's harvester-system
	Admin     *rest.Config // the simulator's administrator
	CACert    []byte       // kube-apiserver's CA, PEM
	Log       *slog.Logger
}

// ControlPlane is KubeVirt's control plane being installed: ports, files
// and clients.
type ControlPlane struct {
	o                           Options
	VirtAPIPort, ControllerPort int
	kube                        kubernetes.Interface
	dyn                         dynamic.Interface
}

// New prepares KubeVirt's control plane on the two loopback ports given.
func New(o Options, virtAPIPort, controllerPort int) (*ControlPlane, error) {
	// virt-operator's burst of writes at install; client-go's default
	// limit (5 requests a second) would make it take seconds.
	cfg := rest.CopyConfig(o.Admin)
	cfg.QPS, cfg.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubevirt: clients: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubevirt: clients: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("kubevirt: %w", err)
	}
	return &ControlPlane{o: o, VirtAPIPort: virtAPIPort, ControllerPort: controllerPort, kube: kube, dyn: dyn}, nil
}

func (c *ControlPlane) path(parts ...string) string {
	return filepath.Join(append([]string{c.o.Dir}, parts...)...)
}

// generate runs bin/kubevirt-install into Dir/objects.
func (c *ControlPlane) generate(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.o.BinDir, Install), "--namespace", c.o.Namespace,
		"--out", c.path("objects"), "--virt-api-port", strconv.Itoa(c.VirtAPIPort))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubevirt: run %s: %w (run `make tools` to build it): %s", Install, err, lastLines(out))
	}
	return nil
}
