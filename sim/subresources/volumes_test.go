package subresources

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

func runningVMI(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kubevirtv1.SchemeGroupVersion.String(), "kind": "VirtualMachineInstance",
		"spec": map[string]any{"domain": map[string]any{"devices": map[string]any{"disks": []any{}}}}, "status": map[string]any{"phase": string(kubevirtv1.Running)},
	}}
	u.SetName(name)
	u.SetNamespace("ns")
	u.SetResourceVersion("1")
	u.SetOwnerReferences(owners)
	return u
}

// TestVMIVolumeOwnedByVM: under Harvester 1.8's gates virt-api refuses
// ephemeral hot-plug into a VMI its VM controls, with KubeVirt's 400 and
// message, and leaves the VMI alone; a VMI of its own is still served.
func TestVMIVolumeOwnedByVM(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: "u", Controller: ptr.To(true)}
	notController := owner
	notController.Controller = nil
	scheme := runtime.NewScheme()
	lists := map[schema.GroupVersionResource]string{gvrVMI: "VirtualMachineInstanceList", gvrVM: "VirtualMachineList"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, lists,
		runningVMI("vm", owner), runningVMI("alone"), runningVMI("loose", notController))
	s := &Server{dyn: dyn}
	add := `{"name":"pvc-a","disk":{"disk":{"bus":"scsi"}},"volumeSource":{"persistentVolumeClaim":{"claimName":"pvc-a"}}}`
	for _, tc := range []struct {
		vmi, route, body string
		code             int
		message          string
	}{
		{"vm", "addVolume", add, http.StatusBadRequest, "VMI ns/vm is owned by a VM"},
		{"vm", "removeVolume", `{"name":"pvc-a"}`, http.StatusBadRequest, "VMI ns/vm is owned by a VM"},
		{"alone", "addVolume", add, http.StatusAccepted, ""},
		{"loose", "addVolume", add, http.StatusAccepted, ""},
		{"missing", "addVolume", add, http.StatusNotFound, `virtualmachineinstance.kubevirt.io "missing" not found`},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(tc.body))
		req := request{Namespace: "ns", Resource: "virtualmachineinstances", Name: tc.vmi, Subresource: strings.ToLower(tc.route)}
		serve := (*Server).addVolume
		if tc.route == "removeVolume" {
			serve = (*Server).removeVolume
		}
		serve(s, context.Background(), w, r, req)
		if w.Code != tc.code {
			t.Errorf("%s %s: HTTP %d, want %d (%s)", tc.route, tc.vmi, w.Code, tc.code, w.Body)
			continue
		}
		if tc.message == "" {
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Message != tc.message || st.Kind != "Status" {
			t.Errorf("%s %s: status %+v (%v), want message %q", tc.route, tc.vmi, st, err, tc.message)
		}
	}
	got, err := dyn.Resource(gvrVMI).Namespace("ns").Get(context.Background(), "vm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if vols, _, _ := unstructured.NestedSlice(got.Object, "spec", "volumes"); len(vols) != 0 {
		t.Errorf("the refused request changed the VMI: volumes %v", vols)
	}
}
