package credentials

import (
	"context"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

func accessObjects(a Access) []runtime.Object { return BuildAccess(a).List() }

// TestRevokeVictimsOnlyTheServiceAccount: revoke picks exactly the four
// objects `kubeconfig` made for the named service account; another service
// account of the same cluster and namespace is not among them, and an
// object of one of the names that is not this tool's is reported.
func TestRevokeVictimsOnlyTheServiceAccount(t *testing.T) {
	a := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: "guest-ccm"}
	other := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: "guest-csi"}
	// a was made before the CSI RoleBinding (cluster-wide) and again since.
	wide := a
	wide.CSIClusterWide = true
	objs := append(accessObjects(a), BuildAccess(wide).ClusterRoleBinding)
	objs = append(objs, accessObjects(other)...)
	h := &Harvester{Client: restapifake.Clients{Kube: fake.NewSimpleClientset(objs...)}}
	victims, errs := h.revokeVictims(context.Background(), a)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var got []string
	for _, v := range victims {
		got = append(got, v.Resource+"/"+v.Name)
	}
	sort.Strings(got)
	want := "clusterrolebindings/harvester-bootstrap:default:guest-ccm:csi-driver,rolebindings/guest-ccm-cloudprovider,rolebindings/guest-ccm-csi-driver,secrets/guest-ccm-token,serviceaccounts/guest-ccm"
	if strings.Join(got, ",") != want {
		t.Errorf("victims %v, want %s", got, want)
	}
}

func TestRevokeVictimsRefusesForeign(t *testing.T) {
	a := Access{ClusterName: "guest", Namespace: "default", ServiceAccount: "guest"}
	objs := accessObjects(a)
	objs[0].(*corev1.ServiceAccount).Labels = nil                                            // made by hand
	objs[len(objs)-1].(*corev1.Secret).Annotations[corev1.ServiceAccountNameKey] = "someone" // another SA's token
	h := &Harvester{Client: restapifake.Clients{Kube: fake.NewSimpleClientset(objs...)}}
	victims, errs := h.revokeVictims(context.Background(), a)
	if len(victims) != 2 || len(errs) != 2 { // the two RoleBindings
		t.Fatalf("victims %v errs %v", victims, errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "left untouched") {
			t.Errorf("error %v", e)
		}
	}
}
