package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	reviewv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// settingsMap is a Settings of fixed values (value already defaulted).
type settingsMap map[string]string

func (s settingsMap) Setting(name string) (string, bool, error) {
	v, ok := s[name]
	return v, ok, nil
}

// shipped are Harvester's defaults, as a fresh Harvester has them.
var shipped = settingsMap{hv.SettingOvercommit: hv.DefaultOvercommit, hv.SettingMemoryOverheadRatio: hv.DefaultMemoryOverheadRatio}

func vmWith(cpu, memory string, change func(*kubevirtv1.VirtualMachine)) *kubevirtv1.VirtualMachine {
	vm := &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				CPU: &kubevirtv1.CPU{Cores: 2, Sockets: 1, Threads: 1},
				Resources: kubevirtv1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
				}},
			}},
		}},
	}
	if change != nil {
		change(vm)
	}
	return vm
}

// review posts one AdmissionReview to the handler and returns its response.
func review(t *testing.T, s Settings, op reviewv1.Operation, old, vm *kubevirtv1.VirtualMachine) (*reviewv1.AdmissionResponse, []byte) {
	t.Helper()
	raw, err := json.Marshal(vm)
	if err != nil {
		t.Fatal(err)
	}
	req := &reviewv1.AdmissionRequest{UID: types.UID("u-1"), Operation: op, Namespace: vm.Namespace, Name: vm.Name, Object: runtime.RawExtension{Raw: raw}}
	if old != nil {
		if req.OldObject.Raw, err = json.Marshal(old); err != nil {
			t.Fatal(err)
		}
	}
	body, _ := json.Marshal(reviewv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	rec := httptest.NewRecorder()
	NewMutator(s, slog.New(slog.NewTextHandler(io.Discard, nil))).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, MutationPath, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	var out reviewv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %s: %v", rec.Body.String(), err)
	}
	if out.Response.UID != req.UID || out.APIVersion != "admission.k8s.io/v1" {
		t.Errorf("response uid %q apiVersion %q, want u-1 and admission.k8s.io/v1", out.Response.UID, out.APIVersion)
	}
	return out.Response, raw
}

// applied is vm after the response's patch, as kube-apiserver applies it.
func applied(t *testing.T, resp *reviewv1.AdmissionResponse, raw []byte) *kubevirtv1.VirtualMachine {
	t.Helper()
	if len(resp.Patch) > 0 {
		if resp.PatchType == nil || *resp.PatchType != reviewv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
		}
		p, err := jsonpatch.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("apply %s: %v", resp.Patch, err)
		}
	}
	var vm kubevirtv1.VirtualMachine
	if err := json.Unmarshal(raw, &vm); err != nil {
		t.Fatal(err)
	}
	return &vm
}

// want is what the stored VM's domain holds ("" for absent).
type want struct {
	reqCPU, reqMem, guest string
	maxSockets            uint32
	cores                 uint32
}

func checkDomain(t *testing.T, name string, vm *kubevirtv1.VirtualMachine, w want) {
	t.Helper()
	d := vm.Spec.Template.Spec.Domain
	q := func(l corev1.ResourceList, n corev1.ResourceName) string {
		if v, ok := l[n]; ok {
			return v.String()
		}
		return ""
	}
	guest := ""
	if d.Memory != nil && d.Memory.Guest != nil {
		guest = d.Memory.Guest.String()
	}
	got := want{reqCPU: q(d.Resources.Requests, corev1.ResourceCPU), reqMem: q(d.Resources.Requests, corev1.ResourceMemory), guest: guest}
	if d.CPU != nil {
		got.maxSockets, got.cores = d.CPU.MaxSockets, d.CPU.Cores
	}
	if got != w {
		t.Errorf("%s: stored domain %+v, want %+v", name, got, w)
	}
}

func TestMutatorCreate(t *testing.T) {
	gpu := func(vm *kubevirtv1.VirtualMachine) {
		vm.Spec.Template.Spec.Domain.Devices.GPUs = []kubevirtv1.GPU{{Name: "g0", DeviceName: "nvidia.com/NVIDIA_A2-4Q"}}
	}
	cases := []struct {
		name     string
		settings settingsMap
		vm       *kubevirtv1.VirtualMachine
		want     want
	}{
		// 4Gi*100/150 truncated to MiB; the shipped ratio 1.5 reserves nothing.
		{"limits only", shipped, vmWith("2", "4Gi", nil), want{"200m", "2730Mi", "4Gi", 1, 2}},
		{"a request of its own is replaced", shipped, vmWith("2", "4Gi", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}), want{"200m", "2730Mi", "4Gi", 1, 2}},
		{"GPU: memory request is the guest memory", shipped, vmWith("2", "4Gi", gpu), want{"200m", "4Gi", "4Gi", 1, 2}},
		{"no ratio setting: 100Mi reserved", settingsMap{hv.SettingOvercommit: hv.DefaultOvercommit}, vmWith("2", "4Gi", gpu),
			want{"200m", "3996Mi", "3996Mi", 1, 2}},
		{"reserved memory annotation", shipped, vmWith("2", "4Gi", func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations = map[string]string{hv.AnnotationReservedMemory: "256Mi"}
		}), want{"200m", "2730Mi", "3840Mi", 1, 2}},
		{"overcommit changed", settingsMap{hv.SettingOvercommit: `{"cpu":200,"memory":200,"storage":100}`}, vmWith("2", "4Gi", nil),
			want{"1", "2Gi", "3996Mi", 1, 2}},
		{"no CPU: Harvester's default topology", shipped, vmWith("2", "4Gi", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU = nil
		}), want{"200m", "2730Mi", "4Gi", 1, 1}},
		{"arm64: no maxSockets", shipped, vmWith("2", "4Gi", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Architecture = "arm64"
		}), want{"200m", "2730Mi", "4Gi", 0, 2}},
		{"no overcommit setting: resources left alone", settingsMap{}, vmWith("2", "4Gi", nil), want{cores: 2}},
		{"empty overcommit setting: resources left alone", settingsMap{hv.SettingOvercommit: ""}, vmWith("2", "4Gi", nil), want{cores: 2}},
	}
	for _, c := range cases {
		resp, raw := review(t, c.settings, reviewv1.Create, nil, c.vm)
		if !resp.Allowed {
			t.Errorf("%s: refused: %v", c.name, resp.Result)
			continue
		}
		checkDomain(t, c.name, applied(t, resp, raw), c.want)
	}
}

func TestMutatorLeavesAloneWithoutSettings(t *testing.T) {
	resp, _ := review(t, settingsMap{}, reviewv1.Create, nil, vmWith("2", "4Gi", nil))
	if !resp.Allowed || len(resp.Patch) != 0 {
		t.Errorf("no settings and a full CPU topology: want allowed without a patch, got allowed=%v patch %s", resp.Allowed, resp.Patch)
	}
}

func TestMutatorRefuses(t *testing.T) {
	cases := []struct {
		name     string
		settings settingsMap
		vm       *kubevirtv1.VirtualMachine
		message  string
	}{
		{"reserved memory not below the limit", shipped, vmWith("2", "1Gi", func(vm *kubevirtv1.VirtualMachine) {
			vm.Annotations = map[string]string{hv.AnnotationReservedMemory: "1Gi"}
		}), "reservedMemory can't be equal or greater than limits.memory  1073741824 1073741824"},
		{"guest memory under 10Mi", settingsMap{hv.SettingOvercommit: hv.DefaultOvercommit}, vmWith("1", "105Mi", nil),
			"guest memory is under the minimum requirement (10 Mi), original: 110100480, final: 5242880"},
		// getOvercommit returns json.Unmarshal's error unwrapped
		// (pkg/webhook/resources/virtualmachine/mutator.go), and the
		// webhook answers it as werror.NewInternalError(err.Error())
		// (pkg/webhook/types/admission.go).
		{"overcommit setting not JSON", settingsMap{hv.SettingOvercommit: "{"}, vmWith("1", "1Gi", nil),
			"unexpected end of JSON input"},
	}
	for _, c := range cases {
		resp, _ := review(t, c.settings, reviewv1.Create, nil, c.vm)
		if resp.Allowed || resp.Result == nil || resp.Result.Message != c.message || resp.Result.Code != http.StatusInternalServerError || len(resp.Patch) != 0 {
			t.Errorf("%s: allowed=%v result %+v patch %s, want refused with %q (500)", c.name, resp.Allowed, resp.Result, resp.Patch, c.message)
		}
	}
}

func TestMutatorUpdate(t *testing.T) {
	// The stored VM, mutated at create with the shipped settings.
	stored := func() *kubevirtv1.VirtualMachine {
		resp, raw := review(t, shipped, reviewv1.Create, nil, vmWith("2", "4Gi", nil))
		return applied(t, resp, raw)
	}
	changed := settingsMap{hv.SettingOvercommit: `{"cpu":200,"memory":200,"storage":100}`, hv.SettingMemoryOverheadRatio: "1.5"}
	cases := []struct {
		name   string
		change func(*kubevirtv1.VirtualMachine)
		want   want
	}{
		{"labels only: resources kept", func(vm *kubevirtv1.VirtualMachine) { vm.Labels = map[string]string{"a": "b"} },
			want{"200m", "2730Mi", "4Gi", 1, 2}},
		{"memory limit changed: mutated again", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("8Gi")
		}, want{"1", "4Gi", "8Gi", 1, 2}},
		{"dedicated CPUs: requests are the limits", func(vm *kubevirtv1.VirtualMachine) {
			vm.Spec.Template.Spec.Domain.CPU.DedicatedCPUPlacement = true
		}, want{"2", "4Gi", "4Gi", 1, 2}},
	}
	for _, c := range cases {
		old := stored()
		vm := old.DeepCopy()
		c.change(vm)
		resp, raw := review(t, changed, reviewv1.Update, old, vm)
		if !resp.Allowed {
			t.Errorf("%s: refused: %v", c.name, resp.Result)
			continue
		}
		checkDomain(t, c.name, applied(t, resp, raw), c.want)
	}
	// A VM being deleted is left alone.
	old := stored()
	vm := old.DeepCopy()
	now := metav1.Now()
	vm.DeletionTimestamp = &now
	vm.Spec.Template.Spec.Domain.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("8Gi")
	if resp, _ := review(t, changed, reviewv1.Update, old, vm); !resp.Allowed || len(resp.Patch) != 0 {
		t.Errorf("deleting VM: allowed=%v patch %s, want allowed without a patch", resp.Allowed, resp.Patch)
	}
}

func TestMutatorRejectsNonReviews(t *testing.T) {
	m := NewMutator(shipped, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, c := range []struct {
		method, body string
		code         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "{}", http.StatusBadRequest},
		{http.MethodPost, "not json", http.StatusBadRequest},
	} {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(c.method, MutationPath, bytes.NewBufferString(c.body)))
		if rec.Code != c.code {
			t.Errorf("%s %q: status %d, want %d", c.method, c.body, rec.Code, c.code)
		}
	}
}
