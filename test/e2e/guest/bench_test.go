package guest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// guestVM is a running VM of cluster whose inline cloud-init installs the
// guest agent (so it gets an address).
func guestVM(name, cluster string) *unstructured.Unstructured {
	return guestVMWith(name, cluster, map[string]any{"userData": "#cloud-config\npackages:\n  - qemu-guest-agent\n"})
}

// guestVMWith is a running VM of cluster with the given cloudInitNoCloud source.
func guestVMWith(name, cluster string, cloudInit map[string]any) *unstructured.Unstructured {
	labels := map[string]any{harvester.LabelGuestCluster: cluster}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": name, "namespace": vmNamespace, "labels": labels},
		"spec": map[string]any{"runStrategy": "Always", "template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"hostname": name,
				"domain": map[string]any{
					"devices":   map[string]any{"interfaces": []any{map[string]any{"name": "nic-1", "bridge": map[string]any{}}}},
					"resources": map[string]any{"requests": map[string]any{"memory": "1Gi"}},
					// Harvester's validator wants a guest memory or a memory limit.
					"memory": map[string]any{"guest": "1Gi"},
				},
				"networks": []any{map[string]any{"name": "nic-1", "multus": map[string]any{"networkName": "default/vlan1"}}},
				"volumes":  []any{map[string]any{"name": "cloudinitdisk", "cloudInitNoCloud": cloudInit}},
			},
		}},
	}}
}

// BenchmarkGuestClusterNodeReady measures the time from a guest cluster's
// first VM to its Ready Node (the guest control plane starts on demand;
// target: under 10 s) and the memory of that control plane (target: under
// 300 MB per guest cluster).
func BenchmarkGuestClusterNodeReady(b *testing.B) {
	var rssMB float64
	for i := range b.N {
		cluster := fmt.Sprintf("bench-%d-%d", time.Now().Unix(), i)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		vms := env.dyn.Resource(gvrVM).Namespace(vmNamespace)
		if _, err := vms.Create(ctx, guestVM(cluster+"-0", cluster), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		kubeconfig := filepath.Join(env.sim.Dir, "guests", cluster, "kubeconfig")
		err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			return guestNodeReady(ctx, kubeconfig, cluster+"-0"), nil
		})
		if err != nil {
			cancel()
			b.Fatalf("guest node of %s not Ready: %v", cluster, err)
		}
		b.StopTimer()
		rssMB += float64(rssKBMatching("--etcd-prefix=/guests/"+cluster+"/")) / 1024
		_ = vms.Delete(ctx, cluster+"-0", metav1.DeleteOptions{})
		_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
			_, err := os.Stat(filepath.Dir(kubeconfig))
			return os.IsNotExist(err), nil
		})
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(rssMB/float64(b.N), "MB-rss/guest-cluster")
}

// rssKBMatching sums the resident memory of processes whose command line
// contains s.
func rssKBMatching(s string) int {
	total := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmdline), s) {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				total += kb
			}
		}
	}
	return total
}

// guestNodeReady reports whether the guest cluster of kubeconfig has node
// name Ready.
func guestNodeReady(ctx context.Context, kubeconfig, name string) bool {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return false
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	return err == nil && nodeReady(n)
}
