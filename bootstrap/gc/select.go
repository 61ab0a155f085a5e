// Package gc finds what a deleted guest cluster left on Harvester (pure
// Select over a clusterstate snapshot) and removes it (Delete, the thin
// API layer). Only objects carrying the labels the node driver, the cloud
// provider or harvester-bootstrap put on them are candidates; while VMs of
// the cluster remain, only what no VM uses.
package gc

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Candidate is one object gc would delete, and why.
type Candidate struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	UID       string `json:"-"`
	Reason    string `json:"reason"`
}

// Ref is "namespace/name", or the name of a cluster-scoped object.
func (c Candidate) Ref() string {
	if c.Namespace == "" {
		return c.Name
	}
	return c.Namespace + "/" + c.Name
}

// MinCloudInitAge is how old a cloud-init Secret without an owner must
// be before gc takes it for a leftover. The node driver creates the Secret
// first and its VM right after (two API calls, each within the driver's
// --harvester-api-timeout, default 30s), and makes the VM the Secret's
// owner only then: a younger Secret without an owner may belong to a
// machine still being created. An hour is far above that window and
// above ordinary clock skew between gc's host and the API server.
const MinCloudInitAge = time.Hour

// Selection is what gc would delete, and what it keeps in doubt (with why).
type Selection struct {
	Candidates []Candidate
	Kept       []Candidate
}

// Select lists the leftovers of h's cluster, in deletion order
// (LoadBalancers, cloud-init Secrets, volumes, then the credential), as of
// now. With the live guest g (nil without one) it first checks that g is
// the cluster (clusterstate.VerifyGuest) and then treats the cluster as live whatever
// VMs the namespace holds: only the LoadBalancers g no longer needs
// (SelectLive), never the credential the guest's cloud provider uses. It
// refuses when a kind it decides by could not be listed.
func Select(h *clusterstate.Harvester, g *clusterstate.Guest, now time.Time) (Selection, error) {
	var errs []error
	for _, k := range []string{clusterstate.KindVM, clusterstate.KindPVC, clusterstate.KindSecret, clusterstate.KindLoadBalancer,
		clusterstate.KindServiceAccount, clusterstate.KindRoleBinding, clusterstate.KindClusterRoleBinding} {
		if e := h.Failed(k); e != "" {
			errs = append(errs, errors.New(e))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Selection{}, fmt.Errorf("find leftovers: %w", err)
	}
	var sel Selection
	live := len(h.ClusterVMs()) > 0
	var lbs []Candidate
	if g != nil {
		var err error
		if lbs, sel.Kept, err = SelectLive(h, g); err != nil {
			return Selection{}, err
		}
		live = true
	} else if !live {
		lbs = loadBalancers(h)
	}
	sel.Candidates = append(sel.Candidates, lbs...)
	secrets, young := cloudInitSecrets(h, now)
	sel.Candidates = append(sel.Candidates, secrets...)
	sel.Kept = append(sel.Kept, young...)
	sel.Candidates = append(sel.Candidates, volumes(h)...)
	if !live {
		sel.Candidates = append(sel.Candidates, credentialObjects(h)...)
	}
	return sel, nil
}

// driverOwned reports whether the node driver labelled the object for the
// cluster (its guest-cluster and creator labels).
func driverOwned(h *clusterstate.Harvester, m metav1.ObjectMeta) bool {
	return m.DeletionTimestamp == nil && h.OfCluster(m.Labels) && m.Labels[harvester.LabelCreator] == harvester.CreatorValue
}

func candidate(kind string, m metav1.ObjectMeta, reason string) Candidate {
	return Candidate{Kind: kind, Namespace: m.Namespace, Name: m.Name, UID: string(m.UID), Reason: reason}
}

func loadBalancers(h *clusterstate.Harvester) []Candidate {
	var out []Candidate
	for _, l := range h.LoadBalancers {
		if l.DeletionTimestamp == nil && l.Labels[harvester.LabelLBCluster] == h.Cluster {
			out = append(out, candidate(clusterstate.KindLoadBalancer, l.ObjectMeta,
				"cloud provider's LoadBalancer for "+l.Labels[harvester.LabelLBServiceNamespace]+"/"+l.Labels[harvester.LabelLBServiceName]+"; no VM of the cluster remains"))
		}
	}
	return out
}

// cloudInitSecrets are the driver's Secrets no VM refers to and whose VM
// (harvesterhci.io/vmName) does not exist, when the VM provably existed and
// is gone: a VM owned the Secret (the driver sets that owner once the VM
// exists; the upstream driver never does), or a volume of the machine made
// no earlier than the Secret exists (Harvester makes those from the VM's
// volume claim templates only once the VM exists; an older one may be left
// from an earlier machine of the same name). Also those without either proof once older than
// MinCloudInitAge (a create that stopped between Secret and VM). The
// others are kept: their VM may still be being created.
func cloudInitSecrets(h *clusterstate.Harvester, now time.Time) (candidates, kept []Candidate) {
	refs, vmNames := map[string]bool{}, map[string]bool{}
	volumeMade := map[string]time.Time{} // machine -> when its newest volume was made
	for _, vm := range h.VMs {
		vmNames[harvester.LabelValue(vm.Name)] = true
		for _, n := range secretRefs(vm) {
			refs[n] = true
		}
	}
	for _, p := range h.PVCs {
		if m := p.Labels[harvester.LabelVMName]; driverOwned(h, p.ObjectMeta) && m != "" && p.CreationTimestamp.After(volumeMade[m]) {
			volumeMade[m] = p.CreationTimestamp.Time
		}
	}
	for _, s := range h.CloudInit {
		if !driverOwned(h, s.ObjectMeta) || refs[s.Name] || vmNames[s.Labels[harvester.LabelVMName]] {
			continue
		}
		vm := s.Labels[harvester.LabelVMName]
		age := now.Sub(s.CreationTimestamp.Time)
		switch {
		case ownedByVM(s.OwnerReferences) || (volumeMade[vm] != time.Time{} && !volumeMade[vm].Before(s.CreationTimestamp.Time)):
			candidates = append(candidates, candidate(clusterstate.KindSecret, s.ObjectMeta, "cloud-init of VM "+vm+", which no longer exists"))
		case age >= MinCloudInitAge:
			candidates = append(candidates, candidate(clusterstate.KindSecret, s.ObjectMeta,
				"cloud-init of VM "+vm+", which does not exist; made "+age.Round(time.Minute).String()+" ago and never owned by a VM (a create that stopped)"))
		default:
			kept = append(kept, candidate(clusterstate.KindSecret, s.ObjectMeta,
				"cloud-init of VM "+vm+", which does not exist yet: made "+age.Round(time.Second).String()+" ago, not owned by a VM and no volume of the machine exists, so the node driver may still be creating it; gc takes it only once it is "+MinCloudInitAge.String()+" old"))
		}
	}
	return candidates, kept
}

// ownedByVM reports whether a VM owns the Secret: the driver sets that
// owner once the VM exists.
func ownedByVM(refs []metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Kind == "VirtualMachine" && r.APIVersion == kubevirtv1.SchemeGroupVersion.String() {
			return true
		}
	}
	return false
}

// secretRefs are the cloud-init Secrets a VM refers to.
func secretRefs(vm kubevirtv1.VirtualMachine) []string {
	var out []string
	if vm.Spec.Template == nil {
		return nil
	}
	add := func(refs ...*corev1.LocalObjectReference) {
		for _, r := range refs {
			if r != nil {
				out = append(out, r.Name)
			}
		}
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil {
			add(nc.UserDataSecretRef, nc.NetworkDataSecretRef)
		}
		if cd := v.CloudInitConfigDrive; cd != nil {
			add(cd.UserDataSecretRef, cd.NetworkDataSecretRef)
		}
	}
	return out
}

// volumes are the driver's PVCs of the cluster no VM uses.
func volumes(h *clusterstate.Harvester) []Candidate {
	used := map[string]bool{}
	for _, vm := range h.VMs {
		for _, n := range claimNames(vm) {
			used[n] = true
		}
	}
	var out []Candidate
	for _, p := range h.PVCs {
		if driverOwned(h, p.ObjectMeta) && !used[p.Name] {
			out = append(out, candidate(clusterstate.KindPVC, p.ObjectMeta, "volume of the cluster no VM uses"))
		}
	}
	return out
}

// claimNames are the PVCs a VM uses: its volumes and the claims of its
// volume claim templates.
func claimNames(vm kubevirtv1.VirtualMachine) []string {
	var out []string
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			switch {
			case v.PersistentVolumeClaim != nil:
				out = append(out, v.PersistentVolumeClaim.ClaimName)
			case v.DataVolume != nil:
				out = append(out, v.DataVolume.Name)
			}
		}
	}
	var templates []corev1.PersistentVolumeClaim
	if json.Unmarshal([]byte(vm.Annotations[harvester.AnnotationVolumeClaimTemplates]), &templates) == nil {
		for _, t := range templates {
			out = append(out, t.Name)
		}
	}
	return out
}

// credentialObjects are what `kubeconfig` created for the cluster: the
// bindings, token Secrets and ServiceAccounts carrying its labels.
func credentialObjects(h *clusterstate.Harvester) []Candidate {
	const reason = "harvester-bootstrap credential of the cluster; no VM of the cluster remains"
	var out []Candidate
	add := func(kind string, m metav1.ObjectMeta) {
		if m.DeletionTimestamp == nil && credentials.IsOwned(m.Labels, h.Cluster) {
			out = append(out, candidate(kind, m, reason))
		}
	}
	for _, b := range h.ClusterRoleBindings {
		add(clusterstate.KindClusterRoleBinding, b.ObjectMeta)
	}
	for _, b := range h.RoleBindings {
		add(clusterstate.KindRoleBinding, b.ObjectMeta)
	}
	for _, t := range h.TokenSecrets {
		if !t.Deleting && credentials.IsOwned(t.Labels, h.Cluster) {
			out = append(out, Candidate{Kind: clusterstate.KindSecret, Namespace: t.Namespace, Name: t.Name, UID: t.UID, Reason: reason})
		}
	}
	for _, sa := range h.ServiceAccounts {
		add(clusterstate.KindServiceAccount, sa.ObjectMeta)
	}
	return out
}
