package bootstrap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
)

const addonSelector = "app.kubernetes.io/managed-by=harvester-bootstrap,app.kubernetes.io/part-of=harvester-guest-addons"

func decodeDocs(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("decode YAML: %v", err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// serverDryRun sends every object to the real kube-apiserver as a
// server-side apply with dryRun=All: full validation, nothing persisted.
func serverDryRun(t *testing.T, ctx context.Context, objs []*unstructured.Unstructured) {
	t.Helper()
	guest, _ := guestAPIServer(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(guest)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(guest)
	if len(objs) == 0 {
		t.Fatal("no objects to check")
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if u.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		body, _ := json.Marshal(u.Object)
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
			FieldManager: "e2e-dry-run", Force: &force, DryRun: []string{metav1.DryRunAll},
		}); err != nil {
			t.Errorf("kube-apiserver rejected %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func cloudConfig(t *testing.T, cluster string) string {
	t.Helper()
	f := tempFile(t, "cloud-config")
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", "default", "-o", f)
	return f
}

func TestRenderedManifestsAcceptedByAPIServer(t *testing.T) {
	ctx := ctxT(t)
	r := mustRun(t, "manifests", "--cluster-name", "e2e-man", "--image-registry", "registry.example.com:5000/mirror", "--host-storage-class", "harvester-longhorn")
	objs := decodeDocs(t, []byte(r.stdout))
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = true
	}
	for _, k := range []string{"CSIDriver/driver.harvesterhci.io", "StorageClass/harvester", "DaemonSet/harvester-csi-driver", "Deployment/harvester-csi-driver-controllers", "Deployment/harvester-cloud-provider"} {
		if !kinds[k] {
			t.Errorf("manifests lack %s", k)
		}
	}
	if !strings.Contains(r.stdout, "registry.example.com:5000/mirror/rancher/harvester-cloud-provider:") {
		t.Error("--image-registry not applied")
	}
	serverDryRun(t, ctx, objs)
}

func TestRKE1AndK3sAddonsAcceptedByAPIServer(t *testing.T) {
	ctx := ctxT(t)
	cc := cloudConfig(t, "e2e-rke1")
	out, node := tempFile(t, "addons.yml"), tempFile(t, "node.yaml")
	mustRun(t, "addon", "rke1", "--cloud-config", cc, "--cluster-name", "e2e-rke1", "--csi", "-o", out, "--node-cloud-init", node)
	for _, f := range []string{out, node} {
		if m := fileMode(t, f); m != 0o600 {
			t.Errorf("%s mode %o, want 600", f, m)
		}
	}
	data, _ := os.ReadFile(out)
	var cluster struct {
		CloudProvider struct{ Name string } `yaml:"cloud_provider"`
		Addons        string                `yaml:"addons"`
	}
	if err := yaml.Unmarshal(data, &cluster); err != nil {
		t.Fatal(err)
	}
	if cluster.CloudProvider.Name != "external" {
		t.Errorf("cloud_provider.name = %q", cluster.CloudProvider.Name)
	}
	objs := decodeDocs(t, []byte(cluster.Addons))
	if objs[0].GetKind() != "Secret" || !strings.Contains(cluster.Addons, "--cluster-name=e2e-rke1") || !strings.Contains(cluster.Addons, "driver.harvesterhci.io") {
		t.Errorf("rke1 addons incomplete")
	}
	serverDryRun(t, ctx, objs)
	nodeData, _ := os.ReadFile(node)
	if !strings.HasPrefix(string(nodeData), "#cloud-config\n") || !strings.Contains(string(nodeData), "/etc/kubernetes/cloud-config") {
		t.Errorf("node cloud-init: %s", nodeData)
	}

	k3s := mustRun(t, "addon", "k3s", "--cloud-config", cc, "--cluster-name", "e2e-k3s")
	serverDryRun(t, ctx, decodeDocs(t, []byte(k3s.stdout)))
}

func addonState(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	guest, _ := guestAPIServer(t)
	dc := discovery.NewDiscoveryClientForConfigOrDie(guest)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(guest)
	state := map[string]string{}
	for _, gk := range []struct{ group, version, kind string }{
		{"", "v1", "Secret"}, {"", "v1", "ServiceAccount"}, {"rbac.authorization.k8s.io", "v1", "ClusterRole"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"}, {"rbac.authorization.k8s.io", "v1", "Role"}, {"rbac.authorization.k8s.io", "v1", "RoleBinding"},
		{"apps", "v1", "Deployment"}, {"apps", "v1", "DaemonSet"}, {"storage.k8s.io", "v1", "CSIDriver"}, {"storage.k8s.io", "v1", "StorageClass"},
	} {
		m, err := mapper.RESTMapping(schemaGK(gk.group, gk.kind), gk.version)
		if err != nil {
			t.Fatal(err)
		}
		l, err := dyn.Resource(m.Resource).List(ctx, metav1.ListOptions{LabelSelector: addonSelector})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			state[gk.kind+" "+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return state
}

func TestApplyIdempotentAndPrunes(t *testing.T) {
	ctx := ctxT(t)
	guest, guestKubeconfig := guestAPIServer(t)
	cc := cloudConfig(t, "e2e-apply")
	base := []string{"apply", "--guest-kubeconfig", guestKubeconfig, "--cloud-config", cc, "--cluster-name", "e2e-apply"}

	dry := mustRun(t, append(base, "--dry-run")...)
	if !strings.Contains(dry.stdout, "created") || len(addonState(t, ctx)) != 0 {
		t.Fatalf("dry run persisted objects or reported nothing:\n%s", dry.stdout)
	}
	first := mustRun(t, base...)
	state1 := addonState(t, ctx)
	if strings.Contains(first.stdout, "unchanged") || len(state1) < 13 {
		t.Fatalf("first apply:\n%s\nstate %v", first.stdout, state1)
	}
	second := mustRun(t, base...)
	for _, line := range strings.Split(strings.TrimSpace(second.stdout), "\n") {
		if !strings.HasSuffix(line, " unchanged") {
			t.Errorf("second apply changed something: %q", line)
		}
	}
	state2 := addonState(t, ctx)
	for k, v := range state1 {
		if state2[k] != v {
			t.Errorf("%s: resourceVersion %s -> %s on a no-op apply", k, v, state2[k])
		}
	}

	// A "newer version" without the CSI driver prunes the CSI objects only.
	noCSI := mustRun(t, append(base, "--csi=false")...)
	state3 := addonState(t, ctx)
	for k := range state3 {
		if strings.Contains(k, "csi") || strings.HasPrefix(k, "StorageClass") {
			t.Errorf("not pruned: %s", k)
		}
	}
	if !strings.Contains(noCSI.stdout, "CSIDriver driver.harvesterhci.io pruned") || state3["Deployment kube-system/harvester-cloud-provider"] == "" {
		t.Errorf("prune result:\n%s", noCSI.stdout)
	}
	// kube-vip comes with the cloud provider; --kube-vip=false prunes it,
	// and its options reach the DaemonSet and the CCM.
	for _, k := range []string{"ServiceAccount kube-system/kube-vip", "ClusterRole /kube-vip", "ClusterRoleBinding /kube-vip", "Role kube-system/kube-vip", "RoleBinding kube-system/kube-vip", "DaemonSet kube-system/kube-vip"} {
		if state3[k] == "" {
			t.Errorf("apply did not install %s", k)
		}
	}
	noVIP := mustRun(t, append(base, "--csi=false", "--kube-vip=false")...)
	state4 := addonState(t, ctx)
	for k := range state4 {
		if strings.Contains(k, "kube-vip") {
			t.Errorf("--kube-vip=false did not prune %s", k)
		}
	}
	if !strings.Contains(noVIP.stdout, "DaemonSet kube-system/kube-vip pruned") || state4["Deployment kube-system/harvester-cloud-provider"] == "" {
		t.Errorf("prune result:\n%s", noVIP.stdout)
	}
	mustRun(t, append(base, "--csi=false", "--vip-interface", "enp2s0", "--external-traffic-policy-local", "--management-network", "default/vlan1")...)
	ds, err := kubernetes.NewForConfigOrDie(guest).AppsV1().DaemonSets("kube-system").Get(ctx, "kube-vip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		}
	}
	// kube-vip's node name comes from the pod's node (never the hostname).
	if env["vip_nodename"] != "fieldRef:spec.nodeName" {
		t.Errorf("kube-vip applied: vip_nodename %q, want from spec.nodeName", env["vip_nodename"])
	}
	if env["vip_interface"] != "enp2s0" || env["svc_election"] != "true" || env["svc_enable"] != "true" || ds.Spec.Template.Spec.Affinity != nil {
		t.Errorf("kube-vip for externalTrafficPolicy Local: env %v, affinity %+v", env, ds.Spec.Template.Spec.Affinity)
	}
	ccm, err := kubernetes.NewForConfigOrDie(guest).AppsV1().Deployments("kube-system").Get(ctx, "harvester-cloud-provider", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := ccm.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--management-network=default/vlan1") {
		t.Errorf("CCM args: %v", args)
	}

	// --no-prune keeps what is no longer rendered.
	mustRun(t, base...)
	mustRun(t, append(base, "--ccm=false", "--no-prune")...)
	if addonState(t, ctx)["Deployment kube-system/harvester-cloud-provider"] == "" {
		t.Error("--no-prune pruned the CCM")
	}
}
