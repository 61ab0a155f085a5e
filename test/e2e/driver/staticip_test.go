package driver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// staticNetwork is the network the static-address tests use.
const staticNetwork = "default/vlan1"

var gvrConfigMap = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func staticFlags(rng string) []string {
	return append(slices.Clone(imageAndNet), "--harvester-static-address-range="+rng,
		"--harvester-static-gateway=10.60.0.1", "--harvester-static-dns=10.60.0.2")
}

// heldAddresses maps machine name -> address of the claims on staticNetwork
// of guest cluster cluster ("": of every cluster). Tests run in parallel
// hold addresses of other ranges on the same network: a test that counts
// what is held counts its own cluster's.
func heldAddresses(t *testing.T, cluster string) map[string]string {
	t.Helper()
	sel := staticip.LabelClaim + "=" + staticip.NetworkValue(staticNetwork)
	if cluster != "" {
		sel += "," + labelCluster + "=" + harvester.LabelValue(cluster)
	}
	list, err := kube.CoreV1().ConfigMaps(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		c, err := staticip.ClaimFromData(cm.Data)
		if err != nil {
			t.Fatalf("claim %s: %v", cm.Name, err)
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "VirtualMachine" || cm.OwnerReferences[0].Name != c.Machine {
			t.Errorf("claim %s is not owned by its machine's VM %s: %+v", cm.Name, c.Machine, cm.OwnerReferences)
		}
		out[c.Machine] = c.Address.Addr().String()
	}
	return out
}

// nic0Address is what the machine's VMI reports on nic-0.
func nic0Address(t *testing.T, name string) string {
	t.Helper()
	for _, i := range getVMI(t, name).Status.Interfaces {
		if i.Name == "nic-0" {
			return i.IP
		}
	}
	return ""
}

// assertStaticMachine checks that the machine's claim, its VMI's nic-0,
// its network data and rancher-machine's ip all say addr.
func assertStaticMachine(t *testing.T, r *rm, name, addr string) {
	t.Helper()
	if got := heldAddresses(t, r.cluster)[name]; got != addr {
		t.Errorf("%s holds %q, want %s", name, got, addr)
	}
	if got := nic0Address(t, name); got != addr {
		t.Errorf("%s's VMI reports %q on nic-0, want %s", name, got, addr)
	}
	if got := strings.TrimSpace(r.stdout("ip", name)); got != addr {
		t.Errorf("rancher-machine ip %s = %q, want %s", name, got, addr)
	}
	nd := string(getSecret(t, name+"-cloudinit").Data["networkdata"])
	vm := getVM(t, name)
	mac := vm.Spec.Template.Spec.Domain.Devices.Interfaces[0].MacAddress
	if !strings.Contains(nd, addr+"/24") || !strings.Contains(nd, `"`+mac+`"`) || !strings.Contains(nd, "via: 10.60.0.1") || !strings.Contains(nd, "- 10.60.0.2") {
		t.Errorf("%s's network data does not set %s/24, gateway 10.60.0.1 and DNS 10.60.0.2 for MAC %s:\n%s", name, addr, mac, nd)
	}
	if mac != staticip.MAC(namespace, name, "nic-0") {
		t.Errorf("%s's nic-0 MAC %s is not the derived %s", name, mac, staticip.MAC(namespace, name, "nic-0"))
	}
}

// TestStaticAddressLifecycle: a machine gets the lowest free address of
// its range, skipping one a foreign object holds; a range with nothing
// free fails before anything exists, naming the range and what holds it;
// a VM deleted by hand frees its address for the next machine; rm frees
// the address.
func TestStaticAddressLifecycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r := newRM(t, "e2e-static")
	const rng = "10.60.0.10-10.60.0.12/24"
	// A foreign object holds 10.60.0.10's claim name.
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: staticip.ClaimName(staticNetwork, netip.MustParseAddr("10.60.0.10")), Namespace: namespace}}
	if _, err := kube.CoreV1().ConfigMaps(namespace).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps(namespace).Delete(context.Background(), foreign.Name, metav1.DeleteOptions{})
	})

	r.mustCreate("e2e-static-pool1-a", staticFlags(rng)...)
	assertStaticMachine(t, r, "e2e-static-pool1-a", "10.60.0.11")
	r.mustCreate("e2e-static-pool1-b", staticFlags(rng)...)
	assertStaticMachine(t, r, "e2e-static-pool1-b", "10.60.0.12")

	row := doctorRow(t, "e2e-static", namespace, "static-addresses")
	for _, want := range []string{"2 held: ", "e2e-static-pool1-a nic-0 10.60.0.11/24 since ", "e2e-static-pool1-b nic-0 10.60.0.12/24 since "} {
		if !strings.Contains(row, want) {
			t.Errorf("doctor's static-addresses row lacks %q: %s", want, row)
		}
	}

	out, err := r.create("e2e-static-pool1-c", staticFlags(rng)...)
	if err == nil {
		t.Fatalf("a machine of an exhausted range was created:\n%s", out)
	}
	for _, want := range []string{`--harvester-static-address-range "` + rng + `": no free address on network ` + staticNetwork,
		"10.60.0.11 held by machine e2e-static-pool1-a", "10.60.0.12 held by machine e2e-static-pool1-b", "nothing was created"} {
		if !strings.Contains(out, want) {
			t.Errorf("the exhausted range's error lacks %q:\n%s", want, out)
		}
	}
	if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(ctx, "e2e-static-pool1-c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed machine's VM exists (err %v)", err)
	}
	r.mustRun("rm", "-y", "e2e-static-pool1-c")

	// The VM deleted by hand: the garbage collector frees its address.
	claimB := staticip.ClaimName(staticNetwork, netip.MustParseAddr("10.60.0.12"))
	if err := virt.KubevirtV1().VirtualMachines(namespace).Delete(ctx, "e2e-static-pool1-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynAdmin
	if err := simtest.WaitObject(ctx, dyn, gvrConfigMap, namespace, claimB, simtest.Gone); err != nil {
		t.Fatalf("the hand-deleted VM's address claim was not freed: %v", err)
	}
	r.mustRun("rm", "-y", "e2e-static-pool1-b")
	r.mustCreate("e2e-static-pool1-d", staticFlags(rng)...)
	assertStaticMachine(t, r, "e2e-static-pool1-d", "10.60.0.12")

	// rm frees the addresses by the time it returns.
	r.mustRun("rm", "-y", "--update-config", "e2e-static-pool1-a")
	r.mustRun("rm", "-y", "--update-config", "e2e-static-pool1-d")
	if held := heldAddresses(t, r.cluster); len(held) != 0 {
		t.Errorf("addresses still held after rm: %v", held)
	}
}

// TestStaticAddressPool creates a pool's machines at once through
// rancher-machine on a range of as many addresses: each holds its own
// address and its VMI reports it; one machine more fails before anything
// of it exists, naming the range; rm frees every address and the next
// pool gets the lowest ones again. The pool is the soak's size: 10
// machines in `make test`, 50 in `make soak` (HARVESTER_E2E_SOAK=long).
func TestStaticAddressPool(t *testing.T) {
	t.Parallel()
	n := soakSizeFromEnv(t).machines
	rng := fmt.Sprintf("10.60.1.10-10.60.1.%d/24", 10+n-1)
	// 50 creates at once take 15 s on 2 idle cores; the wait timeout leaves
	// room for cores that TestUnderCPUHog keeps busy at the same time.
	flags := append(slices.Clone(imageAndNet), "--harvester-static-address-range="+rng, "--harvester-static-gateway=10.60.1.1", "--harvester-wait-timeout=300")
	r := newRM(t, "e2e-staticpool")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("e2e-staticpool-pool1-m%02d", i)
	}
	start := time.Now()
	parallel(t, names, func(name string) (string, error) { return r.create(name, flags...) })
	t.Logf("%d machines created in %s", n, time.Since(start).Round(time.Second))

	held := heldAddresses(t, r.cluster)
	seen := map[string]string{}
	rg, _ := staticip.ParseRange(rng)
	for _, name := range names {
		a := held[name]
		if addr, err := netip.ParseAddr(a); err != nil || !rg.Contains(addr) {
			t.Errorf("%s holds %q, not an address of %s", name, a, rng)
		}
		if other, dup := seen[a]; dup {
			t.Errorf("%s and %s both hold %s", name, other, a)
		}
		seen[a] = name
		if got := nic0Address(t, name); got != a {
			t.Errorf("%s's VMI reports %q on nic-0, want its address %s", name, got, a)
		}
	}
	extra := fmt.Sprintf("e2e-staticpool-pool1-m%02d", n)
	out, err := r.create(extra, flags...)
	if err == nil || !strings.Contains(out, `--harvester-static-address-range "`+rng+`": no free address`) {
		t.Errorf("machine %d of a %d-address range: err %v, want the range's exhaustion:\n%s", n+1, n, err, out)
	}
	if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), extra, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("machine %d's VM exists (err %v)", n+1, err)
	}
	r.mustRun("rm", "-y", extra)

	parallel(t, names, func(name string) (string, error) { return r.run("rm", "-y", "--update-config", name) })
	if left := heldAddresses(t, r.cluster); len(left) != 0 {
		t.Fatalf("addresses still held after rm: %v", left)
	}
	next := []string{"e2e-staticpool-pool2-a", "e2e-staticpool-pool2-b"}
	for i, name := range next {
		r.mustCreate(name, flags...)
		if got, want := heldAddresses(t, r.cluster)[name], fmt.Sprintf("10.60.1.%d", 10+i); got != want {
			t.Errorf("%s of the next pool holds %s, want the freed %s", name, got, want)
		}
	}
	for _, name := range next {
		r.mustRun("rm", "-y", "--update-config", name)
	}
}

// doctorRow runs harvester-bootstrap doctor for cluster in ns and returns
// the row of check as "STATUS seen".
func doctorRow(t *testing.T, cluster, ns, check string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), "doctor", "--cluster-name", cluster, "--namespace", ns, "-o", "json", "--kubeconfig", sim.Kubeconfig)
	out, err := cmd.Output() // exit 1 when another check FAILs
	var report struct {
		Checks []struct{ Check, Status, Seen string }
	}
	if jerr := json.Unmarshal(out, &report); jerr != nil {
		t.Fatalf("doctor: %v / %v\n%s", err, jerr, out)
	}
	for _, r := range report.Checks {
		if r.Check == check {
			return r.Status + " " + r.Seen
		}
	}
	t.Fatalf("doctor has no %s row:\n%s", check, out)
	return ""
}
