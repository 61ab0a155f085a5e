package controllers

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Harvester annotations and labels about VM disks.
const (
	AnnOwnedBy = "harvesterhci.io/owned-by"

	ownerSchemaVM = "kubevirt.io.virtualmachine"
)

// ownerEntry is one element of the harvesterhci.io/owned-by annotation.
type ownerEntry struct {
	Schema string   `json:"schema"`
	Refs   []string `json:"refs"`
}

// parseClaimTemplates decodes the volumeClaimTemplates annotation strictly.
// Every template needs a name; problems are reported all together.
func parseClaimTemplates(ann string) ([]corev1.PersistentVolumeClaim, error) {
	if strings.TrimSpace(ann) == "" {
		return nil, nil
	}
	var pvcs []corev1.PersistentVolumeClaim
	if err := decodeStrictJSON([]byte(ann), &pvcs); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", hv.AnnotationVolumeClaimTemplates, err)
	}
	var errs []error
	seen := map[string]bool{}
	for i, p := range pvcs {
		switch {
		case p.Name == "":
			errs = append(errs, fmt.Errorf("annotation %s: item %d has no metadata.name", hv.AnnotationVolumeClaimTemplates, i))
		case seen[p.Name]:
			errs = append(errs, fmt.Errorf("annotation %s: claim %q listed twice", hv.AnnotationVolumeClaimTemplates, p.Name))
		}
		seen[p.Name] = true
		if id, ok := p.Annotations[hv.AnnotationImageID]; ok {
			if _, _, err := hv.ParseRef(id, ""); err != nil {
				errs = append(errs, fmt.Errorf("annotation %s: claim %q: %s: %w", hv.AnnotationVolumeClaimTemplates, p.Name, hv.AnnotationImageID, err))
			}
		}
	}
	return pvcs, errors.Join(errs...)
}

func parseOwnedBy(ann string) ([]ownerEntry, error) {
	if strings.TrimSpace(ann) == "" {
		return nil, nil
	}
	var owners []ownerEntry
	if err := json.Unmarshal([]byte(ann), &owners); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnOwnedBy, err)
	}
	return owners, nil
}

// addOwner returns the owned-by annotation value with the VM ref added
// (unchanged, and changed=false, when already present).
func addOwner(ann, vmRef string) (value string, changed bool, err error) {
	owners, err := parseOwnedBy(ann)
	if err != nil {
		return "", false, err
	}
	for i, o := range owners {
		if o.Schema != ownerSchemaVM {
			continue
		}
		for _, r := range o.Refs {
			if r == vmRef {
				return ann, false, nil
			}
		}
		owners[i].Refs = append(owners[i].Refs, vmRef)
		return marshalOwners(owners), true, nil
	}
	owners = append(owners, ownerEntry{Schema: ownerSchemaVM, Refs: []string{vmRef}})
	return marshalOwners(owners), true, nil
}

// removeOwner returns the owned-by annotation value without the VM ref;
// empty entries are dropped.
func removeOwner(ann, vmRef string) (value string, changed bool, err error) {
	owners, err := parseOwnedBy(ann)
	if err != nil {
		return "", false, err
	}
	var kept []ownerEntry
	for _, o := range owners {
		var refs []string
		for _, r := range o.Refs {
			if o.Schema == ownerSchemaVM && r == vmRef {
				changed = true
				continue
			}
			refs = append(refs, r)
		}
		if len(refs) > 0 {
			kept = append(kept, ownerEntry{Schema: o.Schema, Refs: refs})
		}
	}
	if !changed {
		return ann, false, nil
	}
	if len(kept) == 0 {
		return "", true, nil
	}
	return marshalOwners(kept), true, nil
}

func marshalOwners(owners []ownerEntry) string {
	b, _ := json.Marshal(owners) // plain strings: cannot fail
	return string(b)
}

// claimsToDelete decides which PVCs go with a deleted VM: those named in
// removedPersistentVolumeClaims, plus, with removeAllPersistentVolumeClaims
// "true", every PVC labelled with the VM's guest cluster name. It returns
// sorted names of existing PVCs only.
func claimsToDelete(vmAnnotations, vmLabels map[string]string, pvcs []corev1.PersistentVolumeClaim) []string {
	want := map[string]bool{}
	for _, n := range strings.Split(vmAnnotations[hv.AnnotationRemovedPVCs], ",") {
		if n = strings.TrimSpace(n); n != "" {
			want[n] = true
		}
	}
	cluster := vmLabels[hv.LabelGuestCluster]
	removeAll := vmAnnotations[hv.AnnotationRemoveAllPVCs] == "true" && cluster != ""
	var out []string
	for _, p := range pvcs {
		if want[p.Name] || (removeAll && p.Labels[hv.LabelGuestCluster] == cluster) {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// vmiClaimNames lists the PVCs a VMI spec mounts (persistentVolumeClaim and
// dataVolume volumes; a DataVolume's PVC has its name).
func vmiClaimNames(spec *kubevirtv1.VirtualMachineInstanceSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.DataVolume != nil:
			out = append(out, v.DataVolume.Name)
		}
	}
	return out
}

// imageCheck is what the start check knows about one image.
type imageCheck struct {
	Found    bool
	Imported bool
	Message  string // why not imported
}
