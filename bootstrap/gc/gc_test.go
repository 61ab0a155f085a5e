package gc

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

const ns = "default"

// testNow is the time the tests select at.
var testNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func meta(name, cluster string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Labels: harvester.MachineLabels(ns, name, cluster)}
}

// vmOf is a driver VM with a root volume and a cloud-init Secret.
func vmOf(name, cluster string) kubevirtv1.VirtualMachine {
	tmpl, _ := json.Marshal([]corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: name + "-disk-0"}}})
	m := meta(name, cluster)
	m.Annotations = map[string]string{harvester.AnnotationVolumeClaimTemplates: string(tmpl)}
	return kubevirtv1.VirtualMachine{ObjectMeta: m, Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		Spec: kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
			{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-disk-0"}}}},
			{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{
				UserDataSecretRef: &corev1.LocalObjectReference{Name: name + "-cloudinit"}}}},
		}},
	}}}
}

func pvc(name, cluster string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: meta(name, cluster)}
}

func secret(vmName, cluster string) corev1.Secret {
	m := meta(vmName+"-cloudinit", cluster)
	m.Labels[harvester.LabelVMName] = vmName
	return corev1.Secret{ObjectMeta: m}
}

func lbOf(name, cluster string) lbapi.LoadBalancer {
	return lbapi.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "uid-lb", Labels: map[string]string{harvester.LabelLBCluster: cluster}}}
}

// state: cluster a with machines a1 (present) and a2 (gone), cluster b with
// b1, and objects without the driver's labels.
func state() *clusterstate.Harvester {
	objs := credentials.BuildAccess(credentials.Access{ClusterName: "a", Namespace: ns}.WithDefaults())
	// The credential was first made with the cluster-wide binding.
	old := credentials.BuildAccess(credentials.Access{ClusterName: "a", Namespace: ns, CSIClusterWide: true}.WithDefaults())
	unlabelled := pvc("a-user-volume", "a")
	delete(unlabelled.Labels, harvester.LabelCreator)
	return &clusterstate.Harvester{
		Target: clusterstate.Target{Cluster: "a", Namespace: ns},
		VMs:    []kubevirtv1.VirtualMachine{vmOf("a-p-a1", "a"), vmOf("b-p-b1", "b")},
		PVCs: []corev1.PersistentVolumeClaim{pvc("a-p-a1-disk-0", "a"), pvc("a-p-a2-disk-0", "a"), unlabelled,
			pvc("b-p-b2-disk-0", "b")},
		CloudInit:           []corev1.Secret{secret("a-p-a1", "a"), secret("a-p-a2", "a"), secret("b-p-b2", "b")},
		LoadBalancers:       []lbapi.LoadBalancer{lbOf("a-default-web-1", "a"), lbOf("b-default-web-1", "b")},
		ServiceAccounts:     []corev1.ServiceAccount{*objs.ServiceAccount},
		RoleBindings:        []rbacv1.RoleBinding{*objs.RoleBinding, *objs.CSIRoleBinding},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{*old.ClusterRoleBinding},
		TokenSecrets:        []clusterstate.TokenSecret{{Namespace: ns, Name: "a-token", Labels: objs.TokenSecret.Labels, Filled: true}},
		Errors:              map[string]string{},
	}
}

func refs(c []Candidate) []string {
	var out []string
	for _, x := range c {
		out = append(out, x.Kind+" "+x.Ref())
	}
	return out
}

func TestSelect(t *testing.T) {
	cases := []struct {
		name   string
		change func(h *clusterstate.Harvester)
		want   []string
	}{
		{"VMs remain: only what they do not use", func(*clusterstate.Harvester) {}, []string{
			"Secret default/a-p-a2-cloudinit", "PersistentVolumeClaim default/a-p-a2-disk-0",
		}},
		{"no VM of the cluster left: everything labelled for it", func(h *clusterstate.Harvester) { h.VMs = h.VMs[1:] }, []string{
			"LoadBalancer default/a-default-web-1",
			"Secret default/a-p-a1-cloudinit", "Secret default/a-p-a2-cloudinit",
			"PersistentVolumeClaim default/a-p-a1-disk-0", "PersistentVolumeClaim default/a-p-a2-disk-0",
			"ClusterRoleBinding harvester-bootstrap:default:a:csi-driver", "RoleBinding default/a-cloudprovider", "RoleBinding default/a-csi-driver",
			"Secret default/a-token", "ServiceAccount default/a",
		}},
		{"objects already being deleted are not listed again", func(h *clusterstate.Harvester) {
			h.VMs = h.VMs[1:]
			ts := metav1.Now()
			h.LoadBalancers[0].DeletionTimestamp = &ts
			h.PVCs[1].DeletionTimestamp = &ts
			h.TokenSecrets[0].Deleting = true
		}, []string{
			"Secret default/a-p-a1-cloudinit", "Secret default/a-p-a2-cloudinit", "PersistentVolumeClaim default/a-p-a1-disk-0",
			"ClusterRoleBinding harvester-bootstrap:default:a:csi-driver", "RoleBinding default/a-cloudprovider", "RoleBinding default/a-csi-driver", "ServiceAccount default/a",
		}},
		{"a Secret whose VM exists but does not refer to it stays", func(h *clusterstate.Harvester) {
			h.VMs[0].Spec.Template.Spec.Volumes = h.VMs[0].Spec.Template.Spec.Volumes[:1]
		}, []string{"Secret default/a-p-a2-cloudinit", "PersistentVolumeClaim default/a-p-a2-disk-0"}},
		{"credential objects of another tool are not candidates", func(h *clusterstate.Harvester) {
			h.VMs = nil
			h.ServiceAccounts[0].Labels = map[string]string{"other": "x"}
			h.RoleBindings, h.ClusterRoleBindings, h.TokenSecrets, h.LoadBalancers, h.CloudInit, h.PVCs = nil, nil, nil, nil, nil, nil
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := state()
			c.change(h)
			got, err := Select(h, nil, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(refs(got.Candidates), c.want) {
				t.Errorf("Select =\n%q\nwant\n%q", refs(got.Candidates), c.want)
			}
		})
	}
}

func TestSelectRefusesWhenAKindCouldNotBeListed(t *testing.T) {
	h := state()
	h.Errors[clusterstate.KindVM] = "list VirtualMachines: forbidden"
	if c, err := Select(h, nil, testNow); err == nil || c.Candidates != nil {
		t.Errorf("Select = %v, %v; want an error and nothing", c, err)
	}
}

func TestDeleteCountsNotFoundAsDoneAndReportsFailures(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns, UID: "uid-sa"}}
	kube := fake.NewClientset(sa)
	kube.PrependReactor("delete", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd timeout")
	})
	scheme := runtime.NewScheme()
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{clusterstate.GVRLoadBalancer: "LoadBalancerList"})
	c := &clusterstate.Clients{Kube: kube, Dyn: dyn}
	got, failed := Delete(context.Background(), c, []Candidate{
		{Kind: clusterstate.KindServiceAccount, Namespace: ns, Name: "a", UID: "uid-sa"},
		{Kind: clusterstate.KindSecret, Namespace: ns, Name: "gone", UID: "uid-x"},
		{Kind: clusterstate.KindLoadBalancer, Namespace: ns, Name: "gone-lb", UID: "uid-y"},
		{Kind: clusterstate.KindPVC, Namespace: ns, Name: "stuck", UID: "uid-z"},
	})
	want := []string{Deleted, Gone, Gone, ""}
	for i, r := range got {
		if r.Outcome != want[i] {
			t.Errorf("%s: outcome %q (error %q), want %q", r.Ref(), r.Outcome, r.Error, want[i])
		}
	}
	if !failed || got[3].Error == "" {
		t.Errorf("the failed PVC delete is not reported: %+v", got[3])
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(context.Background(), "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ServiceAccount still there: %v", err)
	}
}

// A cloud-init Secret whose VM does not exist yet is kept while it may be
// the Secret of a machine still being created (no VM owner, younger than
// MinCloudInitAge); one a VM owned is a leftover at once, one never owned
// once it is old (issue 33, item 5).
func TestSelectKeepsTheSecretOfAMachineBeingCreated(t *testing.T) {
	cases := []struct {
		name    string
		age     time.Duration
		owned   bool
		volumes time.Duration // a volume labelled for the machine exists, made this long after the Secret (0: none)
		want    []string      // candidates besides the unused volume
		kept    int
	}{
		{"just created, no VM yet", 2 * time.Second, false, 0, nil, 1},
		{"created 59 minutes ago, no VM yet", MinCloudInitAge - time.Minute, false, 0, nil, 1},
		{"an hour old and never owned: a create that stopped", MinCloudInitAge, false, 0, []string{"Secret default/a-p-a2-cloudinit"}, 0},
		{"owned by a VM that is gone", 2 * time.Second, true, 0, []string{"Secret default/a-p-a2-cloudinit"}, 0},
		{"not owned, but the machine's volume shows its VM was made", 10 * time.Second, false, time.Second, []string{"Secret default/a-p-a2-cloudinit"}, 0},
		{"not owned; a volume of an earlier machine of the name is no proof", 10 * time.Second, false, -time.Hour, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := state()
			s := &h.CloudInit[1]
			s.CreationTimestamp = metav1.NewTime(testNow.Add(-c.age))
			if c.volumes != 0 {
				h.PVCs[1].Labels[harvester.LabelVMName] = "a-p-a2"
				h.PVCs[1].CreationTimestamp = metav1.NewTime(s.CreationTimestamp.Add(c.volumes))
			}
			if c.owned {
				s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "a-p-a2", UID: "vm-uid"}}
			}
			got, err := Select(h, nil, testNow)
			if err != nil {
				t.Fatal(err)
			}
			want := append(c.want, "PersistentVolumeClaim default/a-p-a2-disk-0")
			if !slices.Equal(refs(got.Candidates), want) || len(got.Kept) != c.kept {
				t.Errorf("Select = %q, kept %q; want %q and %d kept", refs(got.Candidates), refs(got.Kept), want, c.kept)
			}
		})
	}
}

// A delete's Conflict is "replaced since listed" only when the name now
// holds another object; Harvester's webhook refusing to delete a volume a
// VM uses (a 409 too: werror.NewConflict in its PVC validator) is a failure
// with its message.
func TestDeleteTellsRefusalFromReplacement(t *testing.T) {
	attached := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "attached", Namespace: ns, UID: "uid-pvc"}}
	replaced := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "replaced", Namespace: ns, UID: "uid-new"}}
	kube := fake.NewClientset(attached, replaced)
	kube.PrependReactor("delete", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
			Message: `admission webhook "validator.harvesterhci.io" denied the request: can not delete the volume attached which is currently attached to VM: default/vm1`}}
	})
	kube.PrependReactor("delete", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), "replaced", errors.New("Precondition failed: UID in precondition: uid-old, UID in object meta: uid-new"))
	})
	c := &clusterstate.Clients{Kube: kube}
	got, failed := Delete(context.Background(), c, []Candidate{
		{Kind: clusterstate.KindPVC, Namespace: ns, Name: "attached", UID: "uid-pvc"},
		{Kind: clusterstate.KindSecret, Namespace: ns, Name: "replaced", UID: "uid-old"},
	})
	if !failed || got[0].Outcome != "" || !strings.Contains(got[0].Error, "currently attached to VM: default/vm1") {
		t.Errorf("refused delete: outcome %q, error %q, failed %v; want the webhook's refusal as a failure", got[0].Outcome, got[0].Error, failed)
	}
	if got[1].Outcome != Replaced || got[1].Error != "" {
		t.Errorf("replaced Secret: outcome %q, error %q; want %q", got[1].Outcome, got[1].Error, Replaced)
	}
}
