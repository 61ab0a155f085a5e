package bootstrap_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// guestAPICluster is the guest cluster whose own kube-apiserver the add-on
// tests apply to.
const guestAPICluster = "e2e-addons"

var guestAPI struct {
	once       sync.Once
	cfg        *rest.Config
	kubeconfig string
	err        error
}

// guestAPIServer is a guest cluster's own kube-apiserver, where the
// add-ons go: harvester-sim --guest-clusters starts one for the first
// running VM labelled with a cluster. Not the simulated Harvester's: there
// Harvester's admission judges them (its webhook refuses a second default
// StorageClass, for one), as it never does on a real guest cluster.
func guestAPIServer(t *testing.T) (*rest.Config, string) {
	t.Helper()
	guestAPI.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		guestAPI.cfg, guestAPI.kubeconfig, guestAPI.err = startGuestAPI(ctx)
	})
	if guestAPI.err != nil {
		t.Fatalf("guest cluster %s: %v", guestAPICluster, guestAPI.err)
	}
	return guestAPI.cfg, guestAPI.kubeconfig
}

// guestAPIVM is the VM whose guest cluster guestAPIServer starts.
const guestAPIVM = guestAPICluster + "-pool1-0"

// stopGuestAPI deletes the guest cluster's VM, if the tests made it: the
// harness's teardown, so that a simulator the package shares is left as
// it was found.
func stopGuestAPI(ctx context.Context, env *harness.Env) error {
	return simtest.DeleteVM(ctx, env.Virt, "default", guestAPIVM)
}

func startGuestAPI(ctx context.Context) (*rest.Config, string, error) {
	dyn, err := dynamic.NewForConfig(adminCfg)
	if err != nil {
		return nil, "", err
	}
	name := guestAPIVM
	labels := map[string]any{harvester.LabelGuestCluster: guestAPICluster}
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": name, "namespace": "default", "labels": labels},
		"spec": map[string]any{"runStrategy": "Always", "template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			// A guest memory: Harvester's validator refuses a VM with neither it nor a memory limit.
			"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{}, "memory": map[string]any{"guest": "1Gi"}}},
		}},
	}}
	if _, err := dyn.Resource(clusterstate.GVRVM).Namespace("default").Create(ctx, vm, metav1.CreateOptions{}); err != nil {
		return nil, "", err
	}
	path := filepath.Join(sim.Dir, "guests", guestAPICluster, "kubeconfig")
	for {
		if _, err := os.Stat(path); err == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				return nil, "", err
			}
			if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err == nil {
				return cfg, path, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
