package simctl

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestMigrationTargetPod: KubeVirt's own migration controller makes the
// target virt-launcher Pod of a VirtualMachineInstanceMigration, labelled
// kubevirt.io/migrationJobUID with the migration's UID
// (pkg/virt-controller/services/template.go, RenderLaunchManifest, and
// migration.go's createTargetPod), controlled by the VMI, on another host.
func TestMigrationTargetPod(t *testing.T) {
	ns := testNamespace(t)
	createVM(t, ns, "mt", vmOpts{userData: agentCloudConfig})
	before := waitVMI(t, ns, "mt", "running with an address, live-migratable", migratable)
	m := createObject(t, gvrVMIM, newMigration(ns, "mt-1", "mt"))
	done := waitFor(t, gvrVMIM, ns, "mt-1", "final", func(m *kubevirtv1.VirtualMachineInstanceMigration) bool {
		return m.Status.Phase == kubevirtv1.MigrationSucceeded || m.Status.Phase == kubevirtv1.MigrationFailed
	})
	if done.Status.Phase != kubevirtv1.MigrationSucceeded {
		t.Fatalf("migration phase %s", done.Status.Phase)
	}
	pods, err := env.kube.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{LabelSelector: kubevirtv1.MigrationJobLabel + "=" + string(m.GetUID())})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods labelled %s=%s, want the one target pod", len(pods.Items), kubevirtv1.MigrationJobLabel, m.GetUID())
	}
	pod := pods.Items[0]
	ref := metav1.GetControllerOf(&pod)
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	switch {
	case gvk.Kind != "VirtualMachineInstance" || ref.Name != "mt" || ref.UID != before.UID:
		t.Errorf("target pod %s controlled by %+v, want VMI mt (%s)", pod.Name, ref, before.UID)
	case pod.Labels[kubevirtv1.AppLabel] != "virt-launcher":
		t.Errorf("target pod %s labels %v, want kubevirt.io=virt-launcher", pod.Name, pod.Labels)
	case pod.Spec.NodeName == "" || pod.Spec.NodeName == before.Status.NodeName:
		t.Errorf("target pod %s on %q, want a host other than the source %s", pod.Name, pod.Spec.NodeName, before.Status.NodeName)
	case pod.Status.Phase != corev1.PodRunning:
		t.Errorf("target pod %s phase %s, want Running", pod.Name, pod.Status.Phase)
	}
	after := waitVMI(t, ns, "mt", "on the target host", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName == pod.Spec.NodeName
	})
	if after.Status.MigrationState == nil || after.Status.MigrationState.TargetPod != pod.Name {
		t.Errorf("migrationState %+v, want target pod %s", after.Status.MigrationState, pod.Name)
	}
}
