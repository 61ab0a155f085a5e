package guest

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/sim/kubevip"
)

// BenchmarkKubeVIPAnnounce measures the real kube-vip on a 1-node guest
// cluster, over kubeVIPRounds Services per iteration: the time from a
// Service (with a ready endpoint) getting its address, as the cloud
// provider writes it (kube-vip.io/loadbalancerIPs), to the address on the
// node's interface, and from the Service's delete to the address's
// withdrawal once kube-vip has written the ingress (median and maximum).
// kube-vip looks again every second at a Service it saw without an
// address, so the first is up to a second.
func BenchmarkKubeVIPAnnounce(b *testing.B) {
	cluster := fmt.Sprintf("kvbench-%d", time.Now().Unix())
	guest, dir := kubeVIPCluster(b, cluster, 1)
	node := cluster + "-0"
	var announce, withdraw []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for r := range kubeVIPRounds {
			a, w := kubeVIPRound(b, guest, dir, node, fmt.Sprintf("bench-%d-%d", i, r), netip.AddrFrom4([4]byte{198, 51, 100, byte(20 + r)}))
			announce, withdraw = append(announce, a), append(withdraw, w)
		}
	}
	b.StopTimer()
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"address-to-announced", announce}, {"delete-to-withdrawn", withdraw}} {
		slices.Sort(m.d)
		b.ReportMetric(float64(m.d[len(m.d)/2].Milliseconds()), "ms-p50-"+m.name)
		b.ReportMetric(float64(m.d[len(m.d)-1].Milliseconds()), "ms-max-"+m.name)
	}
}

const kubeVIPRounds = 5

// kubeVIPRound creates Service name with a ready endpoint, gives it vip as
// the cloud provider does, waits for it on node's interface, deletes the
// Service and waits for the address to go; it returns both times.
func kubeVIPRound(b *testing.B, guest kubernetes.Interface, dir, node, name string, vip netip.Addr) (announce, withdraw time.Duration) {
	b.Helper()
	ctx := testContext(b)
	on := func() bool { return slices.Contains(nodeAddrs(b, dir, node), netip.PrefixFrom(vip, 32)) }
	svcs := guest.CoreV1().Services("default")
	svc := lbService(name, "")
	delete(svc.Annotations, annLoadBalancerIPs)
	svc, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := guest.DiscoveryV1().EndpointSlices("default").Create(ctx, readyEndpointSlice(svc, "10.42.0.8", node), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annLoadBalancerIPs, vip)
	start := time.Now()
	if _, err := svcs.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, ctx, "the address on the node's interface", on)
	announce = time.Since(start)
	// kube-vip writes the ingress after adding the address; a Service
	// deleted before that waits for kube-vip's status update to give up
	// (it retries every 10 ms for 30 s) before its address goes.
	waitFor(b, ctx, "the ingress written by kube-vip", func() bool {
		s, err := svcs.Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(s.Status.LoadBalancer.Ingress) > 0
	})
	start = time.Now()
	if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, ctx, "the address withdrawn", func() bool { return !on() })
	withdraw = time.Since(start)
	if withdraw > 5*time.Second {
		log, _ := os.ReadFile(filepath.Join(dir, kubevip.Dir, node, "kube-vip.log"))
		b.Logf("withdrawal of %s took %s; kube-vip's log:\n%s", vip, withdraw, log)
	}
	return announce, withdraw
}

// waitFor checks cond every 10 ms (a measurement's resolution) until it
// holds.
func waitFor(b *testing.B, ctx context.Context, what string, cond func() bool) {
	b.Helper()
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}
