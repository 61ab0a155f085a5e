package guests

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func TestNodeNameAndIP(t *testing.T) {
	vm := obj(map[string]any{"metadata": map[string]any{"name": "pool1-abc"}})
	vmi := obj(map[string]any{"spec": map[string]any{"hostname": "Pool1-ABC"}, "status": map[string]any{
		"phase": "Running", "interfaces": []any{map[string]any{"ipAddress": "fe80::1"}, map[string]any{"ipAddress": "10.0.0.5"}}}})
	if got := NodeName(vm, vmi); got != "pool1-abc" {
		t.Errorf("NodeName = %q, want the lower-cased hostname", got)
	}
	if got := NodeName(vm, nil); got != "pool1-abc" {
		t.Errorf("NodeName without VMI = %q, want the VM name", got)
	}
	if got := RunningIP(vmi); got != "10.0.0.5" {
		t.Errorf("RunningIP = %q, want the first IPv4", got)
	}
	_ = unstructured.SetNestedField(vmi.Object, "Scheduled", "status", "phase")
	if got := RunningIP(vmi); got != "" {
		t.Errorf("RunningIP of a VMI not running = %q", got)
	}
	if RunningIP(nil) != "" {
		t.Error("RunningIP(nil) not empty")
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func TestNodeLifecycle(t *testing.T) {
	now := time.Now()
	n := BuildNode("node-a", "10.0.0.5")
	for k, v := range map[string]string{LabelHostname: "node-a", LabelOS: "linux", LabelArch: "amd64", LabelBetaOS: "linux", LabelBetaArch: "amd64",
		LabelRoleControlPlane: "true", LabelRoleMaster: "true", LabelRoleEtcd: "true"} {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr] != "10.0.0.5" || !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider, corev1.TaintEffectNoSchedule) {
		t.Fatalf("registered node = %+v, want provided IP and the uninitialized taint", n.ObjectMeta)
	}
	st, _ := NodeStatus(n, true, "10.0.0.5", now)
	if !st || readyStatus(n) != corev1.ConditionTrue || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}) {
		t.Fatalf("running node status = %+v", n.Status)
	}
	if st, sp := NodeStatus(n, true, "10.0.0.5", now.Add(time.Minute)); st || sp {
		t.Fatal("an unchanged running node was written again")
	}
	st, sp := NodeStatus(n, false, "", now)
	if !st || !sp || readyStatus(n) != corev1.ConditionUnknown || !hasTaint(n, TaintUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatalf("stopped node = %+v %+v, want Ready Unknown and unreachable taints", n.Spec, n.Status.Conditions)
	}
	_, sp = NodeStatus(n, true, "10.0.0.9", now)
	if !sp || hasTaint(n, TaintUnreachable, corev1.TaintEffectNoSchedule) || n.Annotations[cloudproviderapi.AnnotationAlphaProvidedIPAddr] != "10.0.0.9" {
		t.Fatalf("restarted node = %+v, want unreachable taints gone and the new address", n.ObjectMeta)
	}
	if !hasTaint(n, cloudproviderapi.TaintExternalCloudProvider, corev1.TaintEffectNoSchedule) {
		t.Fatal("the uninitialized taint is the cloud provider's to remove")
	}
}

func TestManifests(t *testing.T) {
	files := []userdata.File{
		{Path: "/var/lib/rancher/k3s/server/manifests/harvester-addons.yaml", Content: []byte("a")},
		{Path: "/var/lib/rancher/rke2/server/manifests/ccm.v2.yml", Content: []byte("b")},
		{Path: "/var/lib/rancher/k3s/server/manifests/extra.json", Content: []byte("{}")},
		{Path: "/var/lib/rancher/k3s/server/manifests/notes.txt", Content: []byte("x")},
		{Path: "/var/lib/rancher/k3s/server/manifests/sub/deep.yaml", Content: []byte("x")},
		{Path: "/etc/rancher/k3s/config.yaml.d/90-harvester.yaml", Content: []byte("x")},
		{Path: "/var/lib/rancher/k3s/server/manifests/.hidden.yaml", Content: []byte("x")},
	}
	got := Manifests(files)
	var names []string
	for _, m := range got {
		names = append(names, m.Addon+"="+m.Path)
	}
	want := "ccm=/var/lib/rancher/rke2/server/manifests/ccm.v2.yml extra=/var/lib/rancher/k3s/server/manifests/extra.json harvester-addons=/var/lib/rancher/k3s/server/manifests/harvester-addons.yaml"
	if strings.Join(names, " ") != want {
		t.Fatalf("manifests = %v, want %s", names, want)
	}
	if got[0].Checksum == got[1].Checksum || len(got[0].Checksum) != 64 {
		t.Fatalf("checksums %q %q", got[0].Checksum, got[1].Checksum)
	}
}

func TestParseObjects(t *testing.T) {
	doc := `apiVersion: apps/v1
kind: Deployment
metadata: {name: ccm}
---
# comment only
---
apiVersion: v1
kind: Namespace
metadata: {name: extra}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
`
	objs, err := ParseObjects([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	if strings.Join(kinds, ",") != "Namespace,Deployment,ConfigMap" {
		t.Fatalf("kinds = %v, want Namespace first and the List flattened", kinds)
	}
	if _, err := ParseObjects([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`)); err != nil {
		t.Fatalf("JSON manifest: %v", err)
	}
	if _, err := ParseObjects([]byte("kind: ConfigMap\nmetadata: {name: a}\n")); err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Fatalf("missing apiVersion: err = %v", err)
	}
	MarkOwned(objs[1], "harvester-addons")
	if objs[1].GetLabels()[LabelObjectSetHash] != ObjectSetHash("harvester-addons") || objs[1].GetAnnotations()[AnnOwnerName] != "harvester-addons" {
		t.Fatalf("owner marks: %v %v", objs[1].GetLabels(), objs[1].GetAnnotations())
	}
	if ObjectSetHash("a") == ObjectSetHash("b") {
		t.Fatal("object set hashes collide")
	}
}

func TestNotReadyTaintRemovedOnceReady(t *testing.T) {
	n := BuildNode("a", "10.0.0.1")
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule})
	if _, sp := NodeStatus(n, true, "10.0.0.1", time.Now()); !sp || hasTaint(n, TaintNotReady, corev1.TaintEffectNoSchedule) {
		t.Fatalf("taints = %v, want the not-ready taint gone", n.Spec.Taints)
	}
}
