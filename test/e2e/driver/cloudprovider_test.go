package driver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
)

// writeFile is one write_files entry of a node's cloud-init.
type writeFile struct {
	Path        string `yaml:"path"`
	Content     string `yaml:"content"`
	Encoding    string `yaml:"encoding"`
	Permissions string `yaml:"permissions"`
}

type nodeCloudInit struct {
	Hostname   string      `yaml:"hostname"`
	WriteFiles []writeFile `yaml:"write_files"`
	Runcmd     []any       `yaml:"runcmd"`
}

func (n nodeCloudInit) file(t *testing.T, path string) []byte {
	t.Helper()
	for _, f := range n.WriteFiles {
		if f.Path != path {
			continue
		}
		if f.Permissions != "0600" {
			t.Errorf("%s: permissions %q, want 0600", path, f.Permissions)
		}
		if f.Encoding == "b64" {
			b, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return b
		}
		return []byte(f.Content)
	}
	t.Fatalf("cloud-init has no write_files entry %s", path)
	return nil
}

func readNodeCloudInit(t *testing.T, machine string) nodeCloudInit {
	t.Helper()
	s := getSecret(t, machine+"-cloudinit")
	var n nodeCloudInit
	if err := yaml.Unmarshal(s.Data["userdata"], &n); err != nil {
		t.Fatalf("%s: user data is not cloud-config YAML: %v", machine, err)
	}
	return n
}

// TestCloudProviderPerDistribution creates, for each distribution, a
// 3-machine pool at once with --harvester-cloud-provider and checks the
// nodes' files, the one shared credential and its limits, and that removing
// the machines leaves the credential until `revoke`.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestCloudProviderPerDistribution(t *testing.T) {
	for _, dist := range nodefiles.Distributions {
		t.Run(string(dist), func(t *testing.T) {
			cluster := "cp-" + string(dist)
			r := newRM(t, cluster)
			names := createPoolAtOnce(t, r, 3, "--harvester-cloud-provider="+string(dist),
				"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
			kubeconfigs := map[string]bool{}
			for _, name := range names {
				n := readNodeCloudInit(t, name)
				kubeconfigs[string(checkNodeFiles(t, dist, cluster, n))] = true
				checkInstallScriptLast(t, n)
				if vm := getVM(t, name); strings.Contains(mustJSON(t, vm), "token:") {
					t.Errorf("%s: the VM spec carries a token", name)
				}
			}
			if len(kubeconfigs) != 1 {
				t.Errorf("the machines of one cluster got %d different credentials, want 1", len(kubeconfigs))
			}
			for kc := range kubeconfigs {
				checkGuestCredential(t, []byte(kc))
			}
			sas := credentialServiceAccounts(t, cluster)
			if len(sas) != 1 || sas[0] != cluster {
				t.Fatalf("ServiceAccounts of cluster %s: %v, want exactly [%s]", cluster, sas, cluster)
			}

			guest := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: cluster, Namespace: namespace}
			for where, subjects := range grantSubjects(t, context.Background(), kube, namespace) {
				if n := len(slices.DeleteFunc(slices.Clone(subjects), func(s rbacv1.Subject) bool { return s != guest })); n != 1 {
					t.Errorf("the grant's %s names the cluster's ServiceAccount %d times, want once (machines created at once): %v", where, n, subjects)
				}
			}

			r.mustRun(append([]string{"rm", "-y", "--update-config"}, names...)...)
			if sas := credentialServiceAccounts(t, cluster); len(sas) != 1 {
				t.Fatalf("removing the machines changed the cluster's credential: ServiceAccounts %v", sas)
			}
			bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", namespace)
			if sas := credentialServiceAccounts(t, cluster); len(sas) != 0 {
				t.Errorf("revoke left ServiceAccounts %v", sas)
			}
			if crb, err := kube.RbacV1().ClusterRoleBindings().Get(context.Background(), "harvester-bootstrap:guest-namespace:"+namespace, metav1.GetOptions{}); err == nil && slices.Contains(crb.Subjects, guest) {
				t.Errorf("revoke left the cluster's ServiceAccount in the grant: %v", crb.Subjects)
			}
		})
	}
}

// TestCloudProviderFailsBeforeCreating: a missing cluster name, or a Rancher
// proxy URL as the server without --harvester-cloud-provider-server, fails
// with a message naming the flag, and nothing is created.
func TestCloudProviderFailsBeforeCreating(t *testing.T) {
	t.Parallel()
	cfg, err := sim.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	proxy := strings.Replace(kubeconfig, "server: "+cfg.Host, "server: "+cfg.Host+"/k8s/clusters/c-m-e2e", 1)
	if proxy == kubeconfig {
		t.Fatal("could not turn the kubeconfig's server into a Rancher proxy URL")
	}
	cases := []struct {
		name  string
		flags []string
		env   []string
		want  []string
	}{
		{"no cluster name", []string{"--harvester-cloud-provider=rke2", "--harvester-cluster-name="}, nil,
			[]string{"--harvester-cluster-name: is required with --harvester-cloud-provider"}},
		{"rancher proxy", []string{"--harvester-cloud-provider=k3s"},
			[]string{"HARVESTER_KUBECONFIG_CONTENT=" + b64(proxy)},
			[]string{"--harvester-cloud-provider-server: is required", "/k8s/clusters/c-m-e2e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster := "cp-fail"
			r := newRM(t, cluster)
			name := cluster + "-pool1-x"
			args := append([]string{"create", "-d", "harvester", "--custom-install-script=" + r.script,
				"--harvester-cluster-name=" + cluster, "--harvester-image-name=default/ubuntu-22.04",
				"--harvester-network-name=default/vlan1"}, tc.flags...)
			out, err := r.runEnv(tc.env, append(args, name)...)
			mustFail(t, out, err, tc.want...)
			if sas := credentialServiceAccounts(t, cluster); len(sas) != 0 {
				t.Errorf("a failed create made ServiceAccounts %v", sas)
			}
			if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
				t.Errorf("a failed create made VM %s", name)
			}
		})
	}
}

func createPoolAtOnce(t *testing.T, r *rm, n int, flags ...string) []string {
	t.Helper()
	names := make([]string, n)
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range names {
		names[i] = fmt.Sprintf("%s-pool1-%d", r.cluster, i)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = r.create(names[i], flags...)
		}(i)
	}
	wg.Wait()
	t.Cleanup(func() { _, _ = r.run(append([]string{"rm", "-y", "-f"}, names...)...) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %s: %v\n%s", names[i], err, outs[i])
		}
	}
	return names
}

// checkNodeFiles checks a node's cloud-provider files for dist and returns
// the Harvester kubeconfig they carry.
func checkNodeFiles(t *testing.T, dist nodefiles.Distribution, cluster string, n nodeCloudInit) []byte {
	t.Helper()
	switch dist {
	case nodefiles.RKE2:
		var dropIn map[string]any
		mustYAML(t, n.file(t, nodefiles.RKE2ConfigDropIn), &dropIn)
		if dropIn["cloud-provider-name"] != "harvester" || dropIn["cloud-provider-config"] != nodefiles.RKE2CloudConfigPath {
			t.Errorf("rke2 drop-in: %v", dropIn)
		}
		return n.file(t, nodefiles.RKE2CloudConfigPath)
	case nodefiles.K3s:
		var dropIn map[string]any
		mustYAML(t, n.file(t, nodefiles.K3sConfigDropIn), &dropIn)
		if dropIn["disable-cloud-controller"] != true || !strings.Contains(fmt.Sprint(dropIn["kubelet-arg"]), "cloud-provider=external") {
			t.Errorf("k3s drop-in: %v", dropIn)
		}
		return k3sCloudConfig(t, cluster, n.file(t, nodefiles.K3sAddonsManifest))
	default:
		return n.file(t, nodefiles.RKE1CloudConfigPath)
	}
}

// k3sCloudConfig finds the CCM (with --cluster-name), kube-vip (announcing
// Service addresses) and the cloud-config Secret in the K3s manifest and
// returns the Secret's kubeconfig.
func k3sCloudConfig(t *testing.T, cluster string, manifest []byte) []byte {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(string(manifest)))
	var kc []byte
	ccm, kubeVIP := false, false
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		switch doc["kind"] {
		case "Secret":
			data, _ := doc["data"].(map[string]any)
			s, _ := data["cloud-config"].(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				t.Fatalf("cloud-config Secret: %v", err)
			}
			kc = b
		case "Deployment":
			ccm = ccm || strings.Contains(mustJSON(t, doc), "--cluster-name="+cluster)
		case "DaemonSet":
			js := mustJSON(t, doc)
			kubeVIP = kubeVIP || (strings.Contains(js, `"name":"kube-vip"`) && strings.Contains(js, `{"name":"svc_enable","value":"true"}`))
		}
	}
	if !kubeVIP {
		t.Errorf("the K3s manifest has no kube-vip DaemonSet with svc_enable true")
	}
	if !ccm {
		t.Errorf("the K3s manifest has no CCM Deployment with --cluster-name=%s", cluster)
	}
	if len(kc) == 0 {
		t.Fatal("the K3s manifest has no cloud-config Secret")
	}
	return kc
}

// checkInstallScriptLast: rancher-machine's install script still runs last,
// qemu-guest-agent before it.
func checkInstallScriptLast(t *testing.T, n nodeCloudInit) {
	t.Helper()
	if len(n.Runcmd) == 0 {
		t.Fatal("no runcmd")
	}
	last := fmt.Sprint(n.Runcmd[len(n.Runcmd)-1])
	if !strings.Contains(last, "/usr/local/custom_script/install.sh") {
		t.Errorf("the install script is not last in runcmd: %v", n.Runcmd)
	}
	agent := -1
	for i, c := range n.Runcmd {
		if strings.Contains(fmt.Sprint(c), "qemu-guest-agent") {
			agent = i
		}
	}
	if agent < 0 || agent >= len(n.Runcmd)-1 {
		t.Errorf("qemu-guest-agent is not enabled before the install script: %v", n.Runcmd)
	}
}

// checkGuestCredential: the kubeconfig's token authenticates against the
// simulated Harvester and is limited to what the cloud provider needs.
func checkGuestCredential(t *testing.T, kc []byte) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatalf("the node's kubeconfig: %v", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	settings := schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
	if _, err := dyn.Resource(settings).Get(ctx, "server-version", metav1.GetOptions{}); err != nil {
		t.Fatalf("the node's token does not authenticate: GET settings/server-version: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ra   authzv1.ResourceAttributes
		want bool
	}{
		{authzv1.ResourceAttributes{Verb: "get", Group: "kubevirt.io", Resource: "virtualmachines", Namespace: namespace}, true},
		{authzv1.ResourceAttributes{Verb: "create", Group: "loadbalancer.harvesterhci.io", Resource: "loadbalancers", Namespace: namespace}, true},
		{authzv1.ResourceAttributes{Verb: "delete", Group: "kubevirt.io", Resource: "virtualmachines", Namespace: namespace}, false},
		{authzv1.ResourceAttributes{Verb: "create", Group: "kubevirt.io", Resource: "virtualmachines", Namespace: namespace}, false},
		{authzv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: namespace}, false},
		{authzv1.ResourceAttributes{Verb: "create", Group: "loadbalancer.harvesterhci.io", Resource: "loadbalancers", Namespace: "kube-system"}, false},
	} {
		review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &c.ra}}
		res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed != c.want {
			t.Errorf("node credential: %s %s.%s in %q allowed=%v, want %v", c.ra.Verb, c.ra.Resource, c.ra.Group, c.ra.Namespace, res.Status.Allowed, c.want)
		}
	}
}

func credentialServiceAccounts(t *testing.T, cluster string) []string {
	t.Helper()
	list, err := kube.CoreV1().ServiceAccounts(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: credentials.Selector(cluster),
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sa := range list.Items {
		out = append(out, sa.Name)
	}
	return out
}

// bootstrap runs bin/harvester-bootstrap with the admin kubeconfig.
func bootstrap(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), append(args, "--kubeconfig", sim.Kubeconfig)...)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("harvester-bootstrap %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func mustYAML(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
