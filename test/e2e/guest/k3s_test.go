package guest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// TestK3sPoolWithBootstrapUserData is how users bring up the cloud
// provider today: harvester-bootstrap's K3s cloud-init given to the driver
// as --harvester-user-data.
func TestK3sPoolWithBootstrapUserData(t *testing.T) {
	cluster := "k3s-user-data"
	userData := k3sNodeUserData(t, cluster)
	runK3sPool(t, cluster, "--harvester-user-data="+b64(userData))
}

// runK3sPool creates a 3-machine K3s pool with the given driver flags and
// checks the whole story: the guest cluster comes up, its nodes join, the
// add-ons land, the cloud-config authenticates to Harvester, a load
// balancer created with it gets an address of the cluster's pool, and
// removing the machines removes the guest cluster.
func runK3sPool(t *testing.T, cluster string, driverFlags ...string) {
	t.Helper()
	createPoolFor(t, cluster+"-lb", cluster, "10.230.0.0/24")
	createPoolFor(t, cluster+"-other", cluster+"-other", "10.231.0.0/24")
	m, machines := createPool(t, cluster, 3, driverFlags...)

	guest, guestDyn := guestClients(t, cluster)
	checkNodesJoined(t, guest, machines)
	cloudConfig := checkAddons(t, guest, guestDyn, cluster)

	harvester, ns := harvesterAs(t, cloudConfig)
	if _, err := harvester.Resource(gvrVM).Namespace(ns).Get(testContext(t), machines[0], metav1.GetOptions{}); err != nil {
		t.Fatalf("the cloud-config does not authenticate to Harvester for the cloud provider's calls: get VM: %v", err)
	}
	checkLoadBalancer(t, harvester, ns, cluster, cluster+"-lb", cluster+"-other")

	status := simStatus(t)
	for _, want := range []string{machines[0], machines[2], guestsTaint, " (/var/lib/rancher/k3s/server/manifests/", "kube-vip (DaemonSet)"} {
		if !strings.Contains(status, want) {
			t.Errorf("harvester-sim status lacks %q:\n%s", want, status)
		}
	}

	ctx := testContext(t)
	if _, err := m.Run(ctx, "stop", machines[1]); err != nil {
		t.Fatal(err)
	}
	poll(t, "the stopped machine's node NotReady", func(ctx context.Context) (bool, string) {
		n, err := guest.CoreV1().Nodes().Get(ctx, machines[1], metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !nodeReady(n), "still Ready"
	})
	if n, _ := guest.CoreV1().Nodes().Get(ctx, machines[0], metav1.GetOptions{}); n == nil || !nodeReady(n) {
		t.Fatalf("a running machine's node is not Ready: %+v", n)
	}

	if _, err := m.Remove(ctx, machines...); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.sim.Dir, "guests", cluster)
	poll(t, "the guest cluster gone with its machines", func(context.Context) (bool, string) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), dir + " still there"
	})
}

const guestsTaint = "node.cloudprovider.kubernetes.io/uninitialized=true:" + string(corev1.TaintEffectNoSchedule)

// TestK3sPoolWithDriverCloudProvider is the same story with the driver
// doing it: --harvester-cloud-provider=k3s makes the guest credential and
// writes the K3s manifests and drop-in into each node's cloud-init.
func TestK3sPoolWithDriverCloudProvider(t *testing.T) {
	runK3sPool(t, "k3s-driver", "--harvester-cloud-provider=k3s")
}

// TestK3sMachineWithTwoNICsNamesItsManagementNetwork: a machine with two
// NICs tells the cloud provider (in its K3s add-ons) that the node's
// address is its first network's.
func TestK3sMachineWithTwoNICsNamesItsManagementNetwork(t *testing.T) {
	const cluster = "k3s-two-nics"
	nics := `{"interfaces":[{"networkName":"default/vlan1"},{"networkName":"default/vlan1","model":"e1000"}]}`
	createPool(t, cluster, 1, "--harvester-cloud-provider=k3s", "--harvester-network-info="+nics)
	guest, _ := guestClients(t, cluster)
	var args []string
	poll(t, "the CCM Deployment and kube-vip", func(ctx context.Context) (bool, string) {
		dep, err := guest.AppsV1().Deployments(addons.DefaultNamespace).Get(ctx, addons.CCMName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		args = containerArgs(dep)
		_, err = guest.AppsV1().DaemonSets(addons.DefaultNamespace).Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
		return err == nil, errString(err)
	})
	if !slices.Contains(args, "--management-network=default/vlan1") {
		t.Errorf("CCM args %q lack --management-network=default/vlan1", args)
	}
	checkKubeVIP(t, testContext(t), guest)
}
