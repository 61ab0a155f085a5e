package hwebhook

import (
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/podenv"
)

// The objects are the chart's (deploy/charts/harvester/templates:
// serviceaccount.yaml, rbac.yaml, service.yaml), the Service an
// ExternalName to the forwarder's address.
func TestObjects(t *testing.T) {
	sa, crb, svc := Objects("harvester-system", "127.1.2.3", map[string]string{"l": "v"})
	if sa.Namespace != "harvester-system" || sa.Name != "harvester" || sa.Labels["l"] != "v" {
		t.Errorf("ServiceAccount %s/%s labels %v", sa.Namespace, sa.Name, sa.Labels)
	}
	if crb.Name != "harvester" || crb.RoleRef.Name != "cluster-admin" || crb.RoleRef.Kind != "ClusterRole" ||
		len(crb.Subjects) != 1 || crb.Subjects[0].Kind != "ServiceAccount" || crb.Subjects[0].Name != "harvester" || crb.Subjects[0].Namespace != "harvester-system" {
		t.Errorf("ClusterRoleBinding %+v, want harvester: cluster-admin for harvester-system/harvester", crb)
	}
	if svc.Name != "harvester-webhook" || svc.Spec.Type != corev1.ServiceTypeExternalName || svc.Spec.ExternalName != "127.1.2.3" ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
		t.Errorf("Service %s: %+v, want harvester-webhook, ExternalName 127.1.2.3, port 443", svc.Name, svc.Spec)
	}
}

// The webhook's flags carry Harvester's Deployment environment, and its
// kubeconfig names the Pod's token and CA files (Harvester's validators
// read both files).
func TestArgsAndKubeconfig(t *testing.T) {
	o := Options{Dir: "/state/harvester-webhook", Namespace: "harvester-system"}
	args := o.Args(9443)
	for _, want := range [][]string{{"--namespace", "harvester-system"}, {"--https-port", "9443"},
		{"--controller-user", "system:serviceaccount:harvester-system:harvester"},
		{"--kubeconfig", "/state/harvester-webhook/harvester-webhook.kubeconfig"}} {
		i := slices.Index(args, want[0])
		if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("args %q: want %s %s", args, want[0], want[1])
		}
	}
	cfg := kubeconfig("https://127.0.0.1:6443")
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig without a current context's cluster and user: %+v", cfg)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster.Server != "https://127.0.0.1:6443" || cluster.CertificateAuthority != filepath.Join(podenv.ServiceAccountDir, "ca.crt") ||
		user.TokenFile != filepath.Join(podenv.ServiceAccountDir, "token") || user.Token != "" {
		t.Errorf("kubeconfig cluster %+v user %+v, want the Pod's ca.crt and token files", cluster, user)
	}
}
