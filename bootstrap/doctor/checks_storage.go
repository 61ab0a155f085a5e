package doctor

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// Check names of the storage checks.
const (
	CheckCSIStorageClass = "csi-storageclass"
	CheckVolumes         = "volumes"
	CheckGuestVolumes    = "guest-volumes"
)

// wantedClass is a host StorageClass the CSI add-on uses and who says so.
type wantedClass struct{ name, source string }

// hostClasses are the Harvester StorageClasses the guest's CSI add-on
// creates its volumes with: --host-storage-class, the CSI driver's flag
// and the guest StorageClasses' hostStorageClass parameter. None means
// Harvester's default StorageClass.
func hostClasses(s *clusterstate.Snapshot) []wantedClass {
	var out []wantedClass
	if s.HostStorageClass != "" {
		out = append(out, wantedClass{s.HostStorageClass, "--host-storage-class"})
	}
	g := s.Guest
	if g == nil {
		return out
	}
	look := func(kind, name string, spec corev1.PodSpec) {
		for _, c := range spec.Containers {
			if !strings.Contains(c.Image, addons.CSIName) && c.Name != addons.CSIName {
				continue
			}
			if v := flagValue(append(append([]string{}, c.Command...), c.Args...), addons.CSIHostStorageClassFlag); v != "" {
				out = append(out, wantedClass{v, kind + " " + name + " " + addons.CSIHostStorageClassFlag})
			}
		}
	}
	for _, d := range g.DaemonSets {
		look("DaemonSet", d.Name, d.Spec.Template.Spec)
	}
	for _, d := range g.Deployments {
		look("Deployment", d.Name, d.Spec.Template.Spec)
	}
	for _, sc := range g.StorageClasses {
		if v := sc.Parameters[addons.ParamHostStorageClass]; sc.Provisioner == addons.CSIDriverName && v != "" {
			out = append(out, wantedClass{v, "guest StorageClass " + sc.Name})
		}
	}
	return out
}

// defaultClass is the name of a cluster's default StorageClass, or "".
func defaultClass(classes []storagev1.StorageClass) string {
	for _, sc := range classes {
		if sc.Annotations[addons.AnnDefaultStorageClass] == "true" {
			return sc.Name
		}
	}
	return ""
}

func classNames(classes []storagev1.StorageClass) []string {
	out := make([]string, 0, len(classes))
	for _, sc := range classes {
		out = append(out, sc.Name)
	}
	sort.Strings(out)
	return out
}

func hasClass(classes []storagev1.StorageClass, name string) bool {
	for _, sc := range classes {
		if sc.Name == name {
			return true
		}
	}
	return false
}

// CSIStorageClass: the host StorageClass the CSI add-on is configured
// with exists on Harvester (Harvester's default when none is configured).
func CSIStorageClass(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckCSIStorageClass, clusterstate.KindStorageClass); bad {
		return row
	}
	have := "Harvester has: " + orNone(names(classNames(h.StorageClasses)))
	wanted := hostClasses(s)
	if len(wanted) == 0 {
		def := defaultClass(h.StorageClasses)
		if def == "" {
			return fail(CheckCSIStorageClass, "no host StorageClass configured and Harvester has no default StorageClass; "+have,
				"mark one Harvester StorageClass default (annotation "+addons.AnnDefaultStorageClass+"=true) or configure the CSI add-on with `harvester-bootstrap addon --host-storage-class NAME`")
		}
		return ok(CheckCSIStorageClass, def+" (Harvester's default; no "+addons.CSIHostStorageClassFlag+" configured)")
	}
	var missing, found []string
	for _, w := range wanted {
		if hasClass(h.StorageClasses, w.name) {
			found = append(found, w.name+" ("+w.source+")")
		} else {
			missing = append(missing, w.name+" ("+w.source+")")
		}
	}
	if len(missing) > 0 {
		return fail(CheckCSIStorageClass, "not on Harvester: "+names(missing)+"; "+have,
			"create that StorageClass on Harvester, or configure the CSI add-on with one that exists (`harvester-bootstrap addon --host-storage-class NAME`, or the guest StorageClass's "+addons.ParamHostStorageClass+" parameter); guest PVCs stay Pending until then")
	}
	return ok(CheckCSIStorageClass, names(found))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func claimByName(claims []corev1.PersistentVolumeClaim, name string) *corev1.PersistentVolumeClaim {
	for i := range claims {
		if claims[i].Name == name {
			return &claims[i]
		}
	}
	return nil
}

// problems collects what is wrong and the fixes, each fix once.
type problems struct {
	seen, fixes []string
	fixed       map[string]bool
}

func (p *problems) add(seen, fix string) {
	p.seen = append(p.seen, seen)
	if p.fixed == nil {
		p.fixed = map[string]bool{}
	}
	if fix != "" && !p.fixed[fix] {
		p.fixed[fix] = true
		p.fixes = append(p.fixes, fix)
	}
}

func (p *problems) fix() string { return strings.Join(p.fixes, "; ") }

// hostClaimCause explains why the host PVC of a Pending volume is not
// Bound, and its fix.
func hostClaimCause(h *clusterstate.Harvester, claim string) (string, string) {
	pvc := claimByName(h.Claims, claim)
	switch {
	case pvc == nil:
		return "host PVC " + claim + " does not exist",
			"the CSI driver creates the host PVC before it attaches; remove the volume (removevolume) and let the guest's CSI driver provision it again (delete and re-create the guest PVC)"
	case pvc.Status.Phase == corev1.ClaimBound:
		return "", ""
	case pvc.Spec.StorageClassName != nil && !hasClass(h.StorageClasses, *pvc.Spec.StorageClassName):
		return fmt.Sprintf("host PVC %s is %s: StorageClass %q not found on Harvester", claim, orNone(string(pvc.Status.Phase)), *pvc.Spec.StorageClassName),
			"create that StorageClass on Harvester or fix the CSI add-on's host StorageClass (see the " + CheckCSIStorageClass + " row), then delete and re-create the guest PVC"
	}
	return fmt.Sprintf("host PVC %s is %s", claim, orNone(string(pvc.Status.Phase))),
		"look at the host PVC's events on Harvester (`kubectl -n " + h.Namespace + " describe pvc " + claim + "`): the Longhorn volume is not provisioned"
}

// Volumes: the hot-plugged volumes of the cluster's VMs are attached
// (the VMI's volumeStatus Ready; FAIL otherwise) and no volume request is
// left pending (WARN: KubeVirt applies them within seconds).
func Volumes(s *clusterstate.Snapshot) Row {
	h := &s.Harvester
	if row, bad := unlisted(h.Errors, CheckVolumes, clusterstate.KindVM, clusterstate.KindVMI, clusterstate.KindPVC, clusterstate.KindStorageClass); bad {
		return row
	}
	var p problems
	ready, failed := 0, false
	for _, vm := range h.ClusterVMs() {
		for _, r := range vm.Status.VolumeRequests {
			p.add(vm.Name+": "+volumeRequest(r)+" not applied yet",
				"virt-controller applies volume requests within seconds; if one stays, look at the VM's events on Harvester")
		}
		vmi := h.VMI(vm.Name)
		if vmi == nil {
			continue
		}
		for _, st := range vmi.Status.VolumeStatus {
			if st.HotplugVolume == nil {
				continue
			}
			if st.Phase == kubevirtv1.VolumeReady {
				ready++
				continue
			}
			seen := fmt.Sprintf("%s: volume %s %s (%s: %s)", vm.Name, st.Name, orNone(string(st.Phase)), st.Reason, st.Message)
			cause, fix := hostClaimCause(h, hotplugClaim(vmi, st.Name))
			if cause != "" {
				seen += ", " + cause
			}
			if fix == "" {
				fix = "wait for the attachment pod on Harvester; if it stays, look at the VMI's events"
			}
			p.add(seen, fix)
			failed = true
		}
	}
	switch {
	case failed:
		return fail(CheckVolumes, names(p.seen), p.fix())
	case len(p.seen) > 0: // requests KubeVirt has not applied yet
		return warn(CheckVolumes, names(p.seen), p.fix())
	}
	if ready == 0 {
		return ok(CheckVolumes, "no hot-plugged volume")
	}
	return ok(CheckVolumes, fmt.Sprintf("%d hot-plugged volumes Ready", ready))
}

// volumeRequest says what a pending VM volume request asks for.
func volumeRequest(r kubevirtv1.VirtualMachineVolumeRequest) string {
	switch {
	case r.AddVolumeOptions != nil:
		return "request to add volume " + r.AddVolumeOptions.Name
	case r.RemoveVolumeOptions != nil:
		return "request to remove volume " + r.RemoveVolumeOptions.Name
	}
	return "volume request"
}

// hotplugClaim is the claim behind the VMI's volume name.
func hotplugClaim(vmi *kubevirtv1.VirtualMachineInstance, volume string) string {
	for _, v := range vmi.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.PersistentVolumeClaim != nil:
			return v.PersistentVolumeClaim.ClaimName
		case v.DataVolume != nil:
			return v.DataVolume.Name
		}
	}
	return volume
}

// GuestVolumes: no guest PVC is stuck Pending and no VolumeAttachment
// reports an attach error.
func GuestVolumes(s *clusterstate.Snapshot) Row {
	g := s.Guest
	if row, bad := unlisted(g.Errors, CheckGuestVolumes, clusterstate.KindPVC, clusterstate.KindStorageClass, clusterstate.KindVolumeAttachment); bad {
		return row
	}
	var p problems
	bound := 0
	for _, pvc := range g.PVCs {
		if pvc.Status.Phase == corev1.ClaimBound {
			bound++
			continue
		}
		if seen, fix := pendingCause(g, pvc); seen != "" {
			p.add(pvc.Namespace+"/"+pvc.Name+" "+orNone(string(pvc.Status.Phase))+": "+seen, fix)
		}
	}
	for _, va := range g.VolumeAttachments {
		if e := va.Status.AttachError; e != nil {
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = *va.Spec.Source.PersistentVolumeName
			}
			p.add(fmt.Sprintf("VolumeAttachment %s (volume %s on node %s): %s", va.Name, pv, va.Spec.NodeName, e.Message),
				"see the "+CheckVolumes+" row (the hot-plug into the node's VM on Harvester) and the csi-attacher logs in kube-system")
		}
	}
	if len(p.seen) > 0 {
		return fail(CheckGuestVolumes, names(p.seen), p.fix())
	}
	return ok(CheckGuestVolumes, fmt.Sprintf("%d PVCs Bound, %d VolumeAttachments without error", bound, len(g.VolumeAttachments)))
}

// pendingCause explains a guest PVC that is not Bound ("" when it is
// waiting as designed: a WaitForFirstConsumer class without a consumer).
func pendingCause(g *clusterstate.Guest, pvc corev1.PersistentVolumeClaim) (string, string) {
	name := ""
	if pvc.Spec.StorageClassName != nil {
		name = *pvc.Spec.StorageClassName
	} else {
		name = defaultClass(g.StorageClasses)
	}
	if name == "" {
		return "no StorageClass and the guest cluster has no default",
			"set storageClassName: " + addons.StorageClass + " (the CSI add-on's class) or install the CSI add-on, which makes it the default"
	}
	var sc *storagev1.StorageClass
	for i := range g.StorageClasses {
		if g.StorageClasses[i].Name == name {
			sc = &g.StorageClasses[i]
		}
	}
	switch {
	case sc == nil:
		return fmt.Sprintf("StorageClass %q not found in the guest cluster", name),
			"name an existing StorageClass (" + orNone(names(classNames(g.StorageClasses))) + "); PVCs cannot change class: re-create it"
	case sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer:
		return "", ""
	case sc.Provisioner == addons.CSIDriverName:
		return "waiting for " + addons.CSIName + " to create its volume on Harvester",
			"see the " + CheckCSIStorageClass + " and " + CheckVolumes + " rows and the csi-provisioner logs in kube-system (its Harvester credential, the host StorageClass)"
	}
	return "StorageClass " + name + " is provisioned by " + sc.Provisioner + ", not the Harvester CSI driver",
		"look at the PVC's events (`kubectl describe pvc`)"
}
