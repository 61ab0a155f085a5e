package controllers

import (
	"errors"
	"strings"
	"testing"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func findCond(conds []harvesterv1.Condition, t string) *harvesterv1.Condition {
	for i := range conds {
		if string(conds[i].Type) == t {
			return &conds[i]
		}
	}
	return nil
}

func TestImageStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	img := func(ann map[string]string) *harvesterv1.VirtualMachineImage {
		return &harvesterv1.VirtualMachineImage{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "focal", Annotations: ann},
			Spec: harvesterv1.VirtualMachineImageSpec{URL: "http://example/focal.img"}}
	}
	ok := img(nil)
	ok.Status = imageStatus(ok, nil, now)
	if !imageImported(ok) || ok.Status.StorageClassName != "longhorn-focal" || ok.Status.Progress != 100 {
		t.Errorf("not imported: status %+v", ok.Status)
	}
	if ok.Status.VirtualSize != DefaultVirtualSize {
		t.Errorf("virtual size %d, want the default %d", ok.Status.VirtualSize, DefaultVirtualSize)
	}
	sized := img(map[string]string{AnnVirtualSize: "10737418240"})
	if st := imageStatus(sized, nil, now); st.VirtualSize != 10<<30 {
		t.Errorf("annotated virtual size: %d, want %d", st.VirtualSize, int64(10<<30))
	}
	again := imageStatus(ok, nil, now.Add(time.Hour))
	if c := findCond(again.Conditions, "Imported"); c.LastUpdateTime != now.Format(time.RFC3339) {
		t.Errorf("unchanged status got new time %s", c.LastUpdateTime)
	}
	failed := img(map[string]string{AnnImportResult: "fail"})
	failed.Status = imageStatus(failed, nil, now)
	if c := findCond(failed.Status.Conditions, "Imported"); imageImported(failed) || c == nil || !strings.Contains(c.Message, "simulated import failure") {
		t.Errorf("fail annotation: imported=%v, condition %+v", imageImported(failed), c)
	}
	bad := img(nil)
	bad.Status = imageStatus(bad, errors.New(`unknown field "spec.urll"`), now)
	if c := findCond(bad.Status.Conditions, "Imported"); imageImported(bad) || c == nil || !strings.Contains(c.Message, "spec.urll") {
		t.Errorf("bad spec: imported=%v, condition %+v", imageImported(bad), c)
	}
	if imageImported(img(nil)) {
		t.Error("a fresh image, with no Imported condition, counts as imported")
	}
}

func TestGuestRunsAgent(t *testing.T) {
	tests := []struct {
		name string
		src  guestSources
		want bool
		why  string
	}{
		{"nothing", guestSources{}, false, "no cloud-init user data"},
		{"user data", guestSources{UserData: [][]byte{[]byte("#cloud-config\npackages: [qemu-guest-agent]")}}, true, "user data installs"},
		{"image label", guestSources{Images: map[string]bool{"default/img": true}}, true, "image default/img is labelled"},
		{"unlabelled image", guestSources{Images: map[string]bool{"default/img": false}}, false, "no disk image"},
		{"problem reported", guestSources{Problems: []string{`secret "ud" not found`}}, false, `secret "ud" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := guestRunsAgent(tt.src)
			if got != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("got %v %q", got, why)
			}
		})
	}
}

func TestImageStatusStable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	img := &harvesterv1.VirtualMachineImage{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{AnnImportResult: "fail"}}}
	img.Status = imageStatus(img, nil, now)
	later := imageStatus(img, nil, now.Add(time.Minute))
	if later.LastFailedTime != img.Status.LastFailedTime || !sameConditions(later.Conditions, img.Status.Conditions) {
		t.Errorf("failed image status changes on every reconcile: %+v vs %+v", later, img.Status)
	}
}
