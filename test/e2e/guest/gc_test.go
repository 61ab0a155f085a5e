package guest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// leftoverKinds are the kinds gc looks at, with how the test lists the
// objects of a cluster that carry the driver's, the cloud provider's or
// harvester-bootstrap's labels.
var leftoverKinds = []struct {
	kind      string
	gvr       schema.GroupVersionResource
	clustered bool
	selector  func(cluster string) string
}{
	{"LoadBalancer", simtestLBGVR, false, func(c string) string { return harvester.LabelLBCluster + "=" + c }},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, false, func(c string) string {
		return harvester.LabelGuestCluster + "=" + c + "," + harvester.LabelCreator + "=" + harvester.CreatorValue
	}},
	{"PersistentVolumeClaim", schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, false, func(c string) string {
		return harvester.LabelGuestCluster + "=" + c + "," + harvester.LabelCreator + "=" + harvester.CreatorValue
	}},
	{"ServiceAccount", schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, false, credentials.Selector},
	{"RoleBinding", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, false, credentials.Selector},
	{"ClusterRoleBinding", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, true, credentials.Selector},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, false, credentials.Selector},
}

// labelledObjects lists "Kind ref" of every object labelled for cluster.
func labelledObjects(t *testing.T, ctx context.Context, cluster string) []string {
	t.Helper()
	var out []string
	for _, k := range leftoverKinds {
		ri := env.dyn.Resource(k.gvr)
		opts := metav1.ListOptions{LabelSelector: k.selector(cluster)}
		var names []string
		if k.clustered {
			l, err := ri.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				names = append(names, o.GetName())
			}
		} else {
			l, err := ri.Namespace(vmNamespace).List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				if o.GetDeletionTimestamp() == nil {
					names = append(names, vmNamespace+"/"+o.GetName())
				}
			}
		}
		for _, n := range names {
			out = append(out, k.kind+" "+n)
		}
	}
	sort.Strings(out)
	return out
}

func runGC(t *testing.T, cluster string, args ...string) []gc.Result {
	t.Helper()
	out := bootstrap(t, append([]string{"gc", "--cluster-name", cluster, "--namespace", vmNamespace, "-o", "json"}, args...)...)
	var r []gc.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("gc output: %v\n%s", err, out)
	}
	return r
}

func resultRefs(rs []gc.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind+" "+r.Ref())
	}
	sort.Strings(out)
	return out
}

// TestGCAfterClusterVanished: a 3-machine cluster whose VMs are deleted
// directly (as a vanished cluster leaves things) leaves volumes, cloud-init
// Secrets, a LoadBalancer and its credential; gc lists exactly those,
// --delete removes them, a second run changes nothing, and nothing of a
// second cluster in the same namespace is touched.
func TestGCAfterClusterVanished(t *testing.T) {
	const gone, stay = "gcgone", "gcstay"
	createPoolFor(t, gone+"-lb", gone, "10.233.0.0/24")
	createPoolFor(t, stay+"-lb", stay, "10.234.0.0/24")
	_, goneMachines := createPool(t, gone, 3, "--harvester-cloud-provider=k3s")
	createPool(t, stay, 1, "--harvester-cloud-provider=k3s")
	ctx := testContext(t)
	for _, c := range []string{gone, stay} {
		ccm := &simtest.CCM{Harvester: env.dyn, Namespace: vmNamespace, Cluster: c}
		if _, err := ccm.EnsureLoadBalancer(ctx, simtest.LoadBalancerService("default", "web", "uid-"+c)); err != nil {
			t.Fatal(err)
		}
	}
	stayBefore := labelledObjects(t, ctx, stay)

	if r := runGC(t, gone); len(r) != 0 {
		t.Errorf("gc with every VM present lists %v, want nothing", resultRefs(r))
	}
	// The driver makes each VM the owner of its cloud-init Secret; the
	// upstream driver does not, and its Secrets outlive the VMs.
	secrets := env.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(vmNamespace)
	for _, m := range goneMachines {
		l, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: harvester.LabelVMName + "=" + m})
		if err != nil || len(l.Items) == 0 {
			t.Fatalf("cloud-init Secret of %s: %v %v", m, l, err)
		}
		for _, sec := range l.Items {
			if _, err := secrets.Patch(ctx, sec.GetName(), types.MergePatchType, []byte(`{"metadata":{"ownerReferences":null}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range goneMachines {
		if err := env.dyn.Resource(gvrVM).Namespace(vmNamespace).Delete(ctx, m, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "the VMs gone", func(ctx context.Context) (bool, string) {
		l, err := env.dyn.Resource(gvrVM).Namespace(vmNamespace).List(ctx, metav1.ListOptions{LabelSelector: harvester.LabelGuestCluster + "=" + gone})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d VMs left", len(l.Items))
	})
	want := labelledObjects(t, ctx, gone)
	for _, kind := range []string{"LoadBalancer ", "Secret default/gcgone-pool1-", "PersistentVolumeClaim ", "ServiceAccount ", "RoleBinding ", "Secret default/gcgone-token"} {
		if !slices.ContainsFunc(want, func(s string) bool { return strings.HasPrefix(s, kind) }) {
			t.Fatalf("the vanished cluster left no %q; labelled objects: %v", kind, want)
		}
	}

	// A machine of the cluster being created right now: its cloud-init
	// Secret, with the driver's labels, exists just before its VM (issue
	// 33, item 5). gc keeps it.
	creating := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: gone + "-pool1-new-cloudinit", Namespace: vmNamespace,
		Labels: harvester.MachineLabels(vmNamespace, gone+"-pool1-new", gone)}, Data: map[string][]byte{"userdata": []byte("#cloud-config\n")}}
	if _, err := env.kube.CoreV1().Secrets(vmNamespace).Create(ctx, creating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Secrets(vmNamespace).Delete(context.Background(), creating.Name, metav1.DeleteOptions{})
	})
	inCreation := []string{"Secret " + vmNamespace + "/" + creating.Name}

	dry := runGC(t, gone)
	if got := resultRefs(dry); !slices.Equal(got, want) {
		t.Fatalf("gc dry run lists\n%v\nwant exactly the leftovers\n%v", got, want)
	}
	if left := labelledObjects(t, ctx, gone); !slices.Equal(left, sortedUnion(want, inCreation)) {
		t.Fatalf("the dry run changed something: %v", left)
	}

	deleted := runGC(t, gone, "--delete")
	if got := resultRefs(deleted); !slices.Equal(got, want) {
		t.Errorf("gc --delete reports %v, want %v", got, want)
	}
	for _, r := range deleted {
		if r.Outcome != gc.Deleted {
			t.Errorf("%s %s: outcome %q error %q", r.Kind, r.Ref(), r.Outcome, r.Error)
		}
	}
	poll(t, "the leftovers gone, the Secret of the machine in creation kept", func(ctx context.Context) (bool, string) {
		left := labelledObjects(t, ctx, gone)
		return slices.Equal(left, inCreation), fmt.Sprint(left)
	})
	if again := runGC(t, gone, "--delete"); len(again) != 0 {
		t.Errorf("second gc --delete: %v, want nothing", resultRefs(again))
	}
	if after := labelledObjects(t, ctx, stay); !slices.Equal(after, stayBefore) {
		t.Errorf("the other cluster's objects changed:\nbefore %v\nafter  %v", stayBefore, after)
	}
}

// sortedUnion is a and b, sorted.
func sortedUnion(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	sort.Strings(out)
	return out
}
