// Package affinity builds the core/v1 Affinity for the node driver's
// --harvester-vm-affinity: it pins a node pool's VMs to zones/regions and
// spreads them over hosts, selecting the pool's VMs by the machine-set
// label value the driver gives them (internal/harvester).
package affinity

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldZone        = "zone"
	FieldRegion      = "region"
	FieldNamespace   = "namespace"
	FieldClusterName = "cluster name"
	FieldPool        = "pool"
	FieldMachineName = "machine name"
	FieldRequired    = "required"
	FieldFormat      = "format"
)

// Output formats of Format.
const (
	FormatJSON   = "json"
	FormatBase64 = "base64"
)

// Spec pins a node pool's VMs to zones/regions and spreads them over hosts.
// The pool is named by ClusterName and Pool (its machines are called
// `<cluster>-<pool>-<suffix>`) or by the name of one of its machines.
type Spec struct {
	Zones   []string
	Regions []string

	Namespace   string // the pool's VM namespace (--harvester-vm-namespace)
	ClusterName string
	Pool        string
	MachineName string

	// Required makes spreading a hard rule (at most one VM per host).
	Required bool
}

// spreads reports whether the spec names a pool to spread.
func (s Spec) spreads() bool { return s.Pool != "" || s.MachineName != "" }

// Validate reports every problem at once.
func (s Spec) Validate() error {
	var errs []error
	if len(s.Zones) == 0 && len(s.Regions) == 0 && !s.spreads() {
		errs = append(errs, field.Problem("", "nothing to do: give at least one of").Referring(FieldZone, FieldRegion, FieldPool, FieldMachineName))
	}
	for _, f := range []struct {
		name string
		vals []string
	}{{FieldZone, s.Zones}, {FieldRegion, s.Regions}} {
		for _, v := range f.vals {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 || v == "" {
				errs = append(errs, field.Invalid(f.name, v, "not a valid label value (letters, digits, '-', '_', '.', at most 63 chars)"))
			}
		}
	}
	label := func(name, v string) {
		if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(name, v, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars)"))
		}
	}
	switch {
	case s.Pool != "" && s.MachineName != "":
		errs = append(errs, field.Problem(FieldPool, "give it or").Referring(FieldMachineName))
	case s.Pool != "":
		label(FieldPool, s.Pool)
		if s.ClusterName == "" {
			errs = append(errs, field.Problem(FieldClusterName, "required with").Referring(FieldPool))
		} else {
			label(FieldClusterName, s.ClusterName)
		}
	case s.MachineName != "":
		label(FieldMachineName, s.MachineName)
	}
	if s.spreads() {
		label(FieldNamespace, s.Namespace)
	}
	if s.Required && !s.spreads() {
		errs = append(errs, field.Problem(FieldRequired, "needs the pool to spread:").Referring(FieldPool, FieldMachineName))
	}
	return errors.Join(errs...)
}

// MachineSet is the harvesterhci.io/machineSetName value of the pool's VMs.
func (s Spec) MachineSet() string {
	if s.MachineName != "" {
		return harvester.MachineNameMachineSetValue(s.Namespace, s.MachineName)
	}
	return harvester.PoolMachineSetValue(s.Namespace, s.ClusterName, s.Pool)
}

// Build returns the core/v1 Affinity for --harvester-vm-affinity.
func Build(s Spec) (*corev1.Affinity, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("build affinity: %w", err)
	}
	aff := &corev1.Affinity{}
	if sel := harvester.ZoneSelector(s.Regions, s.Zones); sel != nil {
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}
	}
	if s.spreads() {
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		if s.Required {
			aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{harvester.SpreadTerm(s.MachineSet())}
		} else {
			aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{harvester.PreferredSpread(s.MachineSet())}
		}
	}
	return aff, nil
}

// Format renders the affinity as indented JSON or as base64 of compact JSON.
func Format(aff *corev1.Affinity, format string) ([]byte, error) {
	switch format {
	case FormatJSON, "":
		b, err := json.MarshalIndent(aff, "", "  ")
		return append(b, '\n'), err
	case FormatBase64:
		b, err := json.Marshal(aff)
		return []byte(base64.StdEncoding.EncodeToString(b) + "\n"), err
	}
	return nil, field.Invalid(FieldFormat, format, "must be %s or %s", FormatJSON, FormatBase64)
}
