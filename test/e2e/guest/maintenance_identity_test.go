package guest

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestMaintenanceCheckRefusesAnotherClustersGuest (issue 41): two guest
// clusters of one machine each. maintenance-check --cluster-name of one
// with the other's --guest-kubeconfig took that cluster's nodes for the
// named one's (no roles found: no quorum judged, exit 0). Now it refuses
// it as gc does, naming the node and the VM it runs on, with --namespace
// and without (every namespace), and prints no report; a guest whose
// nodes the cloud provider has not initialised yet (no providerID) cannot
// be shown to be the cluster either; the cluster's own guest, initialised,
// is taken.
func TestMaintenanceCheckRefusesAnotherClustersGuest(t *testing.T) {
	const c1, c4 = "mnt-id-c1", "mnt-id-c4"
	_, m1 := createPool(t, c1, 1, "--harvester-cloud-provider=k3s")
	_, m4 := createPool(t, c4, 1, "--harvester-cloud-provider=k3s")
	g1, _ := guestClients(t, c1)
	g4, _ := guestClients(t, c4)
	checkNodesJoined(t, g1, m1)
	checkNodesJoined(t, g4, m4)
	kc := func(c string) string { return filepath.Join(env.sim.Dir, "guests", c, "kubeconfig") }
	host := vmiHost(t, m4[0])

	out, stderr, code := maintenanceCheckStderr(t, "--cluster-name", c4, "--namespace", vmNamespace, "--guest-kubeconfig", kc(c4), "-o", "json", host)
	if code != 1 || out != "" || !strings.Contains(stderr, "cannot be shown to be the named cluster "+c4+": none of its 1 nodes has a providerID "+harvester.ProviderIDPrefix+"<UID>") {
		t.Errorf("c4's own guest before its cloud provider initialised the node: exit %d\n%s\n%s", code, out, stderr)
	}

	ccmInit(t, g1)
	ccmInit(t, g4)
	for _, ns := range []string{"--namespace=" + vmNamespace, "--namespace="} {
		out, stderr, code := maintenanceCheckStderr(t, "--cluster-name", c4, ns, "--guest-kubeconfig", kc(c1), "-o", "json", host)
		want := "error: maintenance-check: --guest-kubeconfig: the guest cluster cannot be shown to be the named cluster " + c4 + ": node " + m1[0] +
			" runs on VM " + vmNamespace + "/" + m1[0] + ", not labelled for cluster " + c4 + " (labelled for cluster " + c1 + "); valid: the kubeconfig of cluster " + c4
		if code != 1 || out != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s with %s's guest: exit %d\nstdout %s\nstderr %s\nwant %q", ns, c1, code, out, stderr, want)
		}
	}
	out, code = runMaintenanceCheck(t, "--cluster-name", c4, "--namespace", vmNamespace, "--guest-kubeconfig", kc(c4), "-o", "json", host)
	if code != 0 || !strings.Contains(out, `"vm": "`+m4[0]+`"`) {
		t.Errorf("c4's own guest: exit %d\n%s", code, out)
	}
}

// ccmInit initialises the guest's nodes as the cloud provider does
// (providerID harvester://<VM UID>, zone, no uninitialized taint).
func ccmInit(t testing.TB, guest kubernetes.Interface) {
	t.Helper()
	if _, err := simtest.CCMInitNodes(testContext(t), guest, env.dyn, vmNamespace); err != nil {
		t.Fatal(err)
	}
}

// vmiHost is the host the machine's VM instance runs on.
func vmiHost(t testing.TB, machine string) string {
	t.Helper()
	vmi, err := env.virt.KubevirtV1().VirtualMachineInstances(vmNamespace).Get(testContext(t), machine, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return vmi.Status.NodeName
}
