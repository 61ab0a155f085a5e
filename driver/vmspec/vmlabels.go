package vmspec

import (
	"maps"
	"sort"
)

// withUserLabels returns the driver's labels with the user's added (the
// user's keys never collide: ParseVMLabels refuses the driver's domains).
// vmLabels are the labels of the VM and its template: the machine's,
// the checks' and the user's.
func (p VMPlan) vmLabels() map[string]string {
	return withUserLabels(withUserLabels(p.Labels, p.CheckLabels), p.UserLabels)
}

func withUserLabels(own, user map[string]string) map[string]string {
	out := maps.Clone(own)
	if out == nil && len(user) > 0 {
		out = map[string]string{}
	}
	keys := make([]string, 0, len(user))
	for k := range user {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, taken := out[k]; !taken {
			out[k] = user[k]
		}
	}
	return out
}
