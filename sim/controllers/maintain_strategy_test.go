package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMaintainModeStrategyFilter: Harvester v1.8's drain filter
// (pkg/util/drainhelper/helper.go maintainModeStrategyFilter): a pod is
// skipped only with the label harvesterhci.io/vmName and a maintain-mode
// strategy among Shutdown, ShutdownAndRestartAfterEnable and
// ShutdownAndRestartAfterDisable (slices.Contains: case-sensitive).
func TestMaintainModeStrategyFilter(t *testing.T) {
	cases := []struct {
		labels map[string]string
		skip   bool
	}{
		{map[string]string{"harvesterhci.io/vmName": "a", "harvesterhci.io/maintain-mode-strategy": "Shutdown"}, true},
		{map[string]string{"harvesterhci.io/vmName": "a", "harvesterhci.io/maintain-mode-strategy": "ShutdownAndRestartAfterEnable"}, true},
		{map[string]string{"harvesterhci.io/vmName": "a", "harvesterhci.io/maintain-mode-strategy": "ShutdownAndRestartAfterDisable"}, true},
		{map[string]string{"harvesterhci.io/vmName": "a", "harvesterhci.io/maintain-mode-strategy": "Migrate"}, false},
		{map[string]string{"harvesterhci.io/vmName": "a", "harvesterhci.io/maintain-mode-strategy": "shutdown"}, false},
		{map[string]string{"harvesterhci.io/maintain-mode-strategy": "Shutdown"}, false},
		{map[string]string{"harvesterhci.io/vmName": "a"}, false},
	}
	for _, tc := range cases {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
		if got := maintainModeStrategyFilter(pod); got != tc.skip {
			t.Errorf("%v: skip %v, want %v", tc.labels, got, tc.skip)
		}
	}
}
