package controllers

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

func TestParseClaimTemplates(t *testing.T) {
	tests := []struct {
		name      string
		ann       string
		wantNames []string
		wantErr   string
	}{
		{"empty", "", nil, ""},
		{"two claims", `[{"metadata":{"name":"a","annotations":{"harvesterhci.io/imageId":"default/img"}},"spec":{"accessModes":["ReadWriteMany"]}},{"metadata":{"name":"b"}}]`,
			[]string{"a", "b"}, ""},
		{"unknown field", `[{"metadata":{"name":"a"},"spec":{"acessModes":["ReadWriteMany"]}}]`, nil, `unknown field "[0].spec.acessModes"`},
		{"not json", `{`, nil, "volumeClaimTemplates"},
		{"missing name", `[{"metadata":{}}]`, nil, "item 0 has no metadata.name"},
		{"duplicate", `[{"metadata":{"name":"a"}},{"metadata":{"name":"a"}}]`, nil, `"a" listed twice`},
		{"bad image id", `[{"metadata":{"name":"a","annotations":{"harvesterhci.io/imageId":"img"}}}]`, nil, "is not <namespace>/<name>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseClaimTemplates(tt.ann)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, p.Name)
			}
			if !reflect.DeepEqual(names, tt.wantNames) {
				t.Errorf("names = %v, want %v", names, tt.wantNames)
			}
		})
	}
}

func TestOwnedBy(t *testing.T) {
	v, changed, err := addOwner("", "default/vm1")
	if err != nil || !changed || v != `[{"schema":"kubevirt.io.virtualmachine","refs":["default/vm1"]}]` {
		t.Fatalf("add to empty = %q %v %v", v, changed, err)
	}
	if _, changed, _ := addOwner(v, "default/vm1"); changed {
		t.Error("adding an existing owner changed the annotation")
	}
	v2, _, _ := addOwner(v, "default/vm2")
	if v2 != `[{"schema":"kubevirt.io.virtualmachine","refs":["default/vm1","default/vm2"]}]` {
		t.Errorf("add second = %q", v2)
	}
	v3, changed, _ := removeOwner(v2, "default/vm1")
	if !changed || v3 != `[{"schema":"kubevirt.io.virtualmachine","refs":["default/vm2"]}]` {
		t.Errorf("remove = %q %v", v3, changed)
	}
	v4, changed, _ := removeOwner(v3, "default/vm2")
	if !changed || v4 != "" {
		t.Errorf("remove last = %q %v", v4, changed)
	}
	if _, _, err := addOwner("{bad", "default/vm1"); err == nil {
		t.Error("bad annotation accepted")
	}
}

func TestClaimsToDelete(t *testing.T) {
	pvc := func(name, cluster string) corev1.PersistentVolumeClaim {
		p := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if cluster != "" {
			p.Labels = map[string]string{hv.LabelGuestCluster: cluster}
		}
		return p
	}
	pvcs := []corev1.PersistentVolumeClaim{pvc("vm1-disk-0", "c1"), pvc("vm1-data", "c1"), pvc("vm2-disk-0", "c1"), pvc("other", "c2"), pvc("plain", "")}
	tests := []struct {
		name   string
		ann    map[string]string
		labels map[string]string
		want   []string
	}{
		{"nothing", nil, map[string]string{hv.LabelGuestCluster: "c1"}, nil},
		{"removed list", map[string]string{hv.AnnotationRemovedPVCs: "vm1-disk-0, missing,"}, nil, []string{"vm1-disk-0"}},
		{"remove all", map[string]string{hv.AnnotationRemoveAllPVCs: "true"}, map[string]string{hv.LabelGuestCluster: "c1"},
			[]string{"vm1-data", "vm1-disk-0", "vm2-disk-0"}},
		{"remove all without cluster label", map[string]string{hv.AnnotationRemoveAllPVCs: "true"}, nil, nil},
		{"remove all false", map[string]string{hv.AnnotationRemoveAllPVCs: "false", hv.AnnotationRemovedPVCs: "plain"}, map[string]string{hv.LabelGuestCluster: "c1"},
			[]string{"plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimsToDelete(tt.ann, tt.labels, pvcs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVMIClaimNames(t *testing.T) {
	spec := &kubevirtv1.VirtualMachineInstanceSpec{Volumes: []kubevirtv1.Volume{
		{Name: "disk-0", VolumeSource: kubevirtv1.VolumeSource{PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc-a"}}}},
		{Name: "cloudinit", VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: "x"}}},
		{Name: "dv", VolumeSource: kubevirtv1.VolumeSource{DataVolume: &kubevirtv1.DataVolumeSource{Name: "dv-b"}}},
	}}
	if got := vmiClaimNames(spec); !reflect.DeepEqual(got, []string{"pvc-a", "dv-b"}) {
		t.Errorf("got %v", got)
	}
}
