package config

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// ParseVMLabels parses --harvester-vm-labels, `key=value,...`, into labels
// for the VM and its VMI template. Every problem is returned, each naming
// the flag and the entry: keys and values must be valid Kubernetes label
// keys and values, a key may appear once, and keys of Harvester, KubeVirt
// and the driver are refused (they steer those controllers). Blank entries
// (a trailing comma) are ignored.
func ParseVMLabels(s string) (map[string]string, []error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	labels := map[string]string{}
	var errs []error
	bad := func(entry, format string, args ...any) {
		errs = append(errs, FlagProblem(FlagVMLabels, "%q: "+format, append([]any{entry}, args...)...))
	}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, value, ok := strings.Cut(entry, "=")
		if !ok {
			bad(entry, "is not key=value; valid: a comma-separated list such as app=web,team=db")
			continue
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			bad(entry, "key %q is not a valid label key: %s", key, strings.Join(msgs, "; "))
			continue
		}
		if why := harvester.ReservedLabelKey(key); why != "" {
			bad(entry, "key %q is reserved: %s (it steers them, so the driver sets no such label for you); choose a key under your own prefix", key, why)
			continue
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			bad(entry, "value %q is not a valid label value: %s", value, strings.Join(msgs, "; "))
			continue
		}
		if prev, dup := labels[key]; dup {
			bad(entry, "key %q is given twice (first %s=%s); give each key once", key, key, prev)
			continue
		}
		labels[key] = value
	}
	return labels, errs
}
