package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestControlledBy: only a controller reference of the same UID counts (a
// VMI the garbage collector orphaned has none left; a VM of the same name
// made again has another UID).
func TestControlledBy(t *testing.T) {
	ref := func(uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: types.UID("uid-" + uid), Controller: ptr.To(controller)}
	}
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{"controller of that UID", []metav1.OwnerReference{ref("a", true)}, true},
		{"orphaned: no reference", nil, false},
		{"owner but not controller", []metav1.OwnerReference{ref("a", false)}, false},
		{"controller of another UID", []metav1.OwnerReference{ref("b", true)}, false},
	}
	for _, c := range cases {
		u := &unstructured.Unstructured{}
		u.SetOwnerReferences(c.refs)
		if got := controlledBy(u, "uid-a"); got != c.want {
			t.Errorf("%s: controlledBy = %v, want %v", c.name, got, c.want)
		}
	}
}
