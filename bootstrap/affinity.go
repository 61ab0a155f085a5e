package bootstrap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Topology keys Harvester hosts carry.
const (
	ZoneKey     = "topology.kubernetes.io/zone"
	RegionKey   = "topology.kubernetes.io/region"
	HostnameKey = "kubernetes.io/hostname"
)

// AffinitySpec pins a node pool's VMs to zones/regions and spreads them over hosts.
type AffinitySpec struct {
	Zones   []string
	Regions []string
	// SpreadLabel is key=value matching the VMs of one pool (for example
	// harvesterhci.io/machineSetName=<pool>); empty = no spreading.
	SpreadLabel string
	// Required makes spreading a hard rule (at most one VM per host).
	Required bool
}

// Validate reports every problem at once.
func (s AffinitySpec) Validate() error {
	var errs []error
	if len(s.Zones) == 0 && len(s.Regions) == 0 && s.SpreadLabel == "" {
		errs = append(errs, fmt.Errorf("nothing to do: give --%s, --%s and/or --%s", FlagZone, FlagRegion, FlagSpreadLabel))
	}
	for flag, vals := range map[string][]string{FlagZone: s.Zones, FlagRegion: s.Regions} {
		for _, v := range vals {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 || v == "" {
				errs = append(errs, fmt.Errorf("%s %q: not a valid label value", flag, v))
			}
		}
	}
	if s.SpreadLabel != "" {
		k, v, ok := strings.Cut(s.SpreadLabel, "=")
		if !ok || len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 || v == "" {
			errs = append(errs, fmt.Errorf("%s %q: must be key=value, e.g. harvesterhci.io/machineSetName=pool1", FlagSpreadLabel, s.SpreadLabel))
		}
	}
	if s.Required && s.SpreadLabel == "" {
		errs = append(errs, fmt.Errorf("%s: needs --%s", FlagRequired, FlagSpreadLabel))
	}
	return errors.Join(errs...)
}

// BuildAffinity returns the core/v1 Affinity for --harvester-vm-affinity.
func BuildAffinity(s AffinitySpec) (*corev1.Affinity, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("build affinity: %w", err)
	}
	aff := &corev1.Affinity{}
	var reqs []corev1.NodeSelectorRequirement
	if len(s.Regions) > 0 {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: RegionKey, Operator: corev1.NodeSelectorOpIn, Values: s.Regions})
	}
	if len(s.Zones) > 0 {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: ZoneKey, Operator: corev1.NodeSelectorOpIn, Values: s.Zones})
	}
	if len(reqs) > 0 {
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
		}}
	}
	if s.SpreadLabel != "" {
		k, v, _ := strings.Cut(s.SpreadLabel, "=")
		term := corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k: v}},
			TopologyKey:   HostnameKey,
		}
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		if s.Required {
			aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}
		}
	}
	return aff, nil
}

// FormatAffinity renders the affinity as indented JSON or as base64 of compact JSON.
func FormatAffinity(aff *corev1.Affinity, format string) ([]byte, error) {
	switch format {
	case "json", "":
		b, err := json.MarshalIndent(aff, "", "  ")
		return append(b, '\n'), err
	case FormatBase64:
		b, err := json.Marshal(aff)
		return []byte(base64.StdEncoding.EncodeToString(b) + "\n"), err
	}
	return nil, fmt.Errorf("%s %q: must be json or base64", FlagFormat, format)
}
