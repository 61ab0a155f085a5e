package kubeapi

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// ConditionTrue reports whether an object's status.conditions holds a
// condition of type condType with status "True" (Established of a CRD,
// Available of an APIService, a custom resource's own).
func ConditionTrue(u *unstructured.Unstructured, condType string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
