package cloudcred

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/pluginlog"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// TestEnsureGuestGrantSaysWhatToRun: the driver names its guest
// ServiceAccount in an existing grant; a credential that may not (one made
// before it could) or a namespace without a grant its credential may not
// make is a warning naming the grant and the command to run, never an
// error of the create.
func TestEnsureGuestGrantSaysWhatToRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	forbid := func(verb, resource string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetVerb() == verb && a.GetResource().Resource == resource {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}, "", nil)
			}
			return false, nil, nil
		}
	}
	grant := credentials.BuildGrant("vms", credentials.GrantOptions{}, nil).List()
	for _, c := range []struct {
		name    string
		objs    []runtime.Object
		reactor k8stesting.ReactionFunc
		want    []string
	}{
		{"grant present", grant, nil, []string{"the grant harvester-bootstrap:guest-namespace:vms names ServiceAccount vms/guest-a"}},
		{"an older driver credential", grant, forbid("get", "clusterrolebindings"), []string{
			"could not name ServiceAccount vms/guest-a in the grant harvester-bootstrap:guest-namespace:vms",
			"`harvester-bootstrap driver-credential --cloud-provider --machine-namespace vms`"}},
		{"no grant, may not make it", nil, forbid("list", "serviceaccounts"), []string{
			"namespace vms has no grant harvester-bootstrap:guest-namespace:vms",
			"`harvester-bootstrap driver-credential --cloud-provider --machine-namespace vms`"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kube := fake.NewClientset(c.objs...)
			if c.reactor != nil {
				kube.PrependReactor("*", "*", c.reactor)
			}
			var out bytes.Buffer
			pluginlog.SetOutput(&out, io.Discard)
			t.Cleanup(func() { pluginlog.SetOutput(io.Discard, io.Discard) })
			m := &machine.Machine{Name: "m1", Config: config.Config{ClusterName: "guest-a", VMNamespace: "vms"}}
			ensureGrant(ctx, m, &credentials.Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}, "guest-a")
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("log %q lacks %q", out.String(), w)
				}
			}
			if c.name == "grant present" {
				crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, credentials.GrantBindingName("vms"), metav1.GetOptions{})
				if err != nil || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "guest-a" {
					t.Errorf("grant after the driver's add: %v %v", err, crb)
				}
			}
		})
	}
}

// TestGuestAddonsManagementNetwork: a machine with several NICs tells the
// cloud provider its first network is the management network; one NIC
// leaves the cloud provider's own choice.
func TestGuestAddonsManagementNetwork(t *testing.T) {
	one := []vmspec.NICPlan{{Name: "nic-0", Network: config.ObjectRef{Namespace: "default", Name: "vlan1"}}}
	two := append(one, vmspec.NICPlan{Name: "nic-1", Network: config.ObjectRef{Namespace: "storage", Name: "vlan20"}})
	if o := guestAddons("g", one); o.LB.ManagementNetwork != "" || o.ClusterName != "g" || !o.KubeVIP {
		t.Errorf("one NIC: %+v", o)
	}
	o := guestAddons("g", two)
	if got := o.LB.CCMArgs(); len(got) != 1 || got[0] != "--management-network=default/vlan1" {
		t.Errorf("two NICs: CCM args %q", got)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}
