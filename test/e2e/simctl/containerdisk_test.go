package simctl

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// TestContainerDiskMaintenance: a VM booting from a containerDisk migrates
// off a host entering maintenance. virt-controller renders the target
// pod with the image's digest, read from the source pod's container status
// (KubeVirt v1.7 pkg/container-disk ExtractImageIDsFromSourcePod,
// toImageWithDigest: <image without tag>@sha256:<digest of imageID>), and
// refuses the migration without one ("can not proceed with the migration
// when no reproducible image digest can be detected").
func TestContainerDiskMaintenance(t *testing.T) {
	const host = "harvester-node-2"
	const image = "quay.io/kubevirt/cirros-container-disk-demo:v1.7.0"
	ns := maintenanceScene(t, host)
	createVM(t, ns, "cd", vmOpts{userData: agentCloudConfig, affinity: preferHost(host), containerDisk: image})
	before := waitVMI(t, ns, "cd", "running with an address, live-migratable", migratable)
	if before.Status.NodeName != host {
		t.Fatalf("placed on %s, want %s", before.Status.NodeName, host)
	}
	src := diskContainer(t, ns, "vm.kubevirt.io/name=cd", before.Status.NodeName)

	out, err := simCLI(t, "maintenance enable", "--timeout", "60s", host)
	if err != nil || !strings.Contains(out, "migrated  "+ns+"/cd -> ") {
		t.Fatalf("enable: %v\n%s\nwant cd migrated; events: %s", err, out, events(t, ns))
	}
	after := waitVMI(t, ns, "cd", "migrated", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return v.Status.MigrationState != nil && v.Status.MigrationState.Completed
	})
	ms := after.Status.MigrationState
	if ms.Failed || ms.SourceNode != host || after.Status.NodeName == host || ms.TargetNode != after.Status.NodeName {
		t.Errorf("migrationState %+v, node %s: want completed from %s to another host", ms, after.Status.NodeName, host)
	}
	if ann, cordoned := hostAnnotations(t, host); ann[keyStatus] != "completed" || !cordoned {
		t.Errorf("host annotations %v cordoned %v, want completed", ann, cordoned)
	}
	_, digest, ok := strings.Cut(src.ImageID, "@sha256:")
	if !ok {
		t.Fatalf("source pod's containerDisk image ID %q has no digest", src.ImageID)
	}
	dst := diskContainer(t, ns, kubevirtv1.MigrationJobLabel+"="+string(ms.MigrationUID), after.Status.NodeName)
	if want := strings.TrimSuffix(image, ":v1.7.0") + "@sha256:" + digest; dst.Image != want {
		t.Errorf("target pod's containerDisk image %q, want %q", dst.Image, want)
	}
	if _, d, _ := strings.Cut(dst.ImageID, "@sha256:"); d != digest {
		t.Errorf("target pod's image ID %q, want the source's digest %s", dst.ImageID, digest)
	}
	if out, err := simCLI(t, "maintenance disable", host); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
}

// diskContainer is the status of the containerDisk container (KubeVirt
// names it volume<volume name>) of the launcher pod selected on node.
func diskContainer(t *testing.T, ns, selector, node string) corev1.ContainerStatus {
	t.Helper()
	pods, err := env.kube.CoreV1().Pods(ns).List(testContext(t), metav1.ListOptions{LabelSelector: "kubevirt.io=virt-launcher," + selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if p.Spec.NodeName == node && c.Name == "volumecontainerdisk" {
				return c
			}
		}
	}
	t.Fatalf("no launcher pod %s on %s with a running volumecontainerdisk container", selector, node)
	return corev1.ContainerStatus{}
}

// events are the namespace's event messages, to say why a step failed.
func events(t *testing.T, ns string) string {
	t.Helper()
	list, err := env.kube.CoreV1().Events(ns).List(testContext(t), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range list.Items {
		b.WriteString("\n" + e.InvolvedObject.Kind + " " + e.InvolvedObject.Name + " " + e.Reason + ": " + e.Message)
	}
	return b.String()
}
