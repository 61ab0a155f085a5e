package driver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/doctor"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/driverrights"
	"github.com/harvester-kit/harvester-machine/test/harness"
)

// issueDriverCredential runs `harvester-bootstrap driver-credential` and
// returns the kubeconfig it wrote (0600).
func issueDriverCredential(t *testing.T, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driver.yaml")
	bootstrap(t, append(append([]string{"driver-credential"}, args...), "-o", path)...)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("driver kubeconfig mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func tokenOf(t *testing.T, kc string) string {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil || cfg.BearerToken == "" {
		t.Fatalf("driver kubeconfig has no token: %v", err)
	}
	return cfg.BearerToken
}

// TestDriverCredentialOnly: with nothing but the credential
// `harvester-bootstrap driver-credential` makes, rancher-machine creates
// machines (with and without the cloud provider), stops and removes them
// (start: TestDriverCredentialStart); the credential may do nothing else
// (its patch of VM instances stays in its namespace, and KubeVirt refuses
// it on their spec); rotate replaces the token (the
// old one is rejected when it returns); after revoke the driver says the
// credential was rejected (401).
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestDriverCredentialOnly(t *testing.T) {
	const cluster = "e2e-dcred"
	args := []string{"--namespace", namespace, "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	if again := issueDriverCredential(t, args...); tokenOf(t, again) != tokenOf(t, kc) {
		t.Errorf("a second driver-credential issued another token: it must be idempotent")
	}
	if exp, _ := clusterstate.JWTExpiry(tokenOf(t, kc)); exp != nil {
		t.Errorf("the driver's token expires at %s; it must not", exp)
	}

	r := newRM(t, cluster)
	r.env = append(r.env, "HARVESTER_KUBECONFIG_CONTENT="+b64(kc)) // the last value of a variable wins
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}
	plain, withCP, victim := cluster+"-pool1-d0000", cluster+"-pool1-d0001", cluster+"-pool1-d0002"
	out := r.mustCreate(plain, base...)
	if strings.Contains(out, "forbidden") {
		t.Errorf("create with the driver credential skipped a check as forbidden:\n%s", out)
	}
	r.mustRun("stop", plain)
	if s := status(t, r, plain); s != "Stopped" {
		t.Errorf("after stop: status %q", s)
	}
	r.mustCreate(withCP, append(base, "--harvester-cloud-provider=k3s")...)
	t.Cleanup(func() { bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", namespace) })
	// The grant names only guest ServiceAccounts: the driver added its own.
	for where, subjects := range grantSubjects(t, context.Background(), kube, namespace) {
		if !slices.Contains(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: cluster, Namespace: namespace}) {
			t.Errorf("after a create with --harvester-cloud-provider: the grant's %s names %v, not the guest ServiceAccount %s", where, subjects, cluster)
		}
	}
	checkOnlyDriverRights(t, kc)
	checkVMIPatchesConfined(t, kc, withCP) // running (plain is stopped)
	checkDoctorDriverRows(t, cluster, kc)
	r.mustRun("rm", "-y", plain, withCP)

	rotated := issueDriverCredential(t, append([]string{"rotate"}, args...)...)
	if tokenOf(t, rotated) == tokenOf(t, kc) {
		t.Errorf("rotate kept the token")
	}
	if out, err := r.create(victim, base...); err == nil || !strings.Contains(out, "401") {
		t.Errorf("create with the token rotate replaced: %v\n%s", err, out)
	}
	r.env = append(r.env, "HARVESTER_KUBECONFIG_CONTENT="+b64(rotated))
	r.mustCreate(victim, base...)
	bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...)
	out, err := r.run("status", victim)
	if err == nil || !strings.Contains(out, "401") || !strings.Contains(out, "5827") {
		t.Errorf("status after revoke: %v, want the 401 message:\n%s", err, out)
	}
	r.runEnv([]string{"HARVESTER_KUBECONFIG_CONTENT=" + b64(kubeconfig)}, "rm", "-y", "--update-config", victim) //nolint:errcheck // newRM's cleanup checks nothing is left
}

// checkDoctorDriverRows: doctor --driver-kubeconfig says the driver
// credential does not expire and has exactly the driver's rights, and that
// the admin kubeconfig holds rights on cluster RBAC no driver needs.
func checkDoctorDriverRows(t *testing.T, cluster, kc string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "driver.yaml")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file         string
		status, seen string
	}{
		{path, "OK", "has exactly the driver's rights in namespace default (with those of --harvester-cloud-provider)"},
		{sim.Kubeconfig, "FAIL", "can delete any ClusterRoleBinding"},
	} {
		cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), "doctor", "--kubeconfig", sim.Kubeconfig,
			"--cluster-name", cluster, "--namespace", namespace, "--driver-kubeconfig", c.file, "-o", "json")
		out, _ := cmd.Output() // exit 1 when some other check fails
		var report struct{ Checks []doctor.Row }
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("doctor -o json: %v\n%s", err, out)
		}
		got := map[string]doctor.Row{}
		for _, r := range report.Checks {
			got[r.Check] = r
		}
		if r := got[doctor.CheckDriverRights]; string(r.Status) != c.status || !strings.Contains(r.Seen, c.seen) {
			t.Errorf("doctor --driver-kubeconfig %s: %s %q, want %s %q", c.file, r.Status, r.Seen, c.status, c.seen)
		}
		if c.file == path {
			if r := got[doctor.CheckDriverCredential]; r.Status != doctor.OK || !strings.Contains(r.Seen, "does not expire") {
				t.Errorf("doctor driver-credential row: %s %q", r.Status, r.Seen)
			}
		}
	}
}

// checkOnlyDriverRights: the credential's rules are exactly the driver's,
// and access reviews of what a cluster admin could do say no.
func checkOnlyDriverRights(t *testing.T, kc string) {
	t.Helper()
	cs := clientOf(t, kc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rr, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authzv1.SelfSubjectRulesReview{Spec: authzv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// With --cloud-provider it may add guests to its machine namespace's
	// grant (GrantEdit).
	if x := driverrights.Excess(rr.Status.ResourceRules, append(driverrights.All(), credentials.GrantEdit([]string{namespace})...)); len(x) > 0 {
		t.Errorf("the driver credential may do more than the driver needs: %v", x)
	}
	// Issued with --cloud-provider (not --static-addresses).
	for _, p := range driverrights.Of(driverrights.Always, driverrights.CloudProvider, driverrights.Checks, driverrights.Repairs) {
		if !p.ClusterScoped && !driverrights.RulesAllow(rr.Status.ResourceRules, p) {
			t.Errorf("the driver credential may not %s", p)
		}
	}
	denied := []authzv1.ResourceAttributes{
		{Namespace: "kube-system", Verb: "list", Resource: "secrets"},
		{Namespace: "harvester-system", Verb: "get", Resource: "secrets"},
		{Namespace: "harvester-system", Verb: "create", Group: "kubevirt.io", Resource: "virtualmachines"},
		{Namespace: "harvester-system", Verb: "patch", Group: "kubevirt.io", Resource: "virtualmachineinstances"},
		{Namespace: namespace, Verb: "create", Resource: "pods"},
		{Namespace: namespace, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "roles"},
		{Namespace: namespace, Verb: "update", Resource: "persistentvolumeclaims"},
		{Verb: "delete", Resource: "nodes"},
		{Verb: "delete", Resource: "namespaces"},
		{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "cluster-admin"},
		{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "update", Group: "harvesterhci.io", Resource: "settings", Name: "server-version"},
		{Verb: "get", Group: "harvesterhci.io", Resource: "settings", Name: "backup-target"},
		{Verb: "list", Group: "storage.k8s.io", Resource: "storageclasses"},
	}
	for _, a := range denied {
		res, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status.Allowed {
			t.Errorf("the driver credential may %s %s.%s %s in %q", a.Verb, a.Resource, a.Group, a.Name, a.Namespace)
		}
	}
}

// TestDriverCredentialStart: start (which connects to the guest) works with
// only the driver credential, without the cloud-provider rights.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestDriverCredentialStart(t *testing.T) {
	harness.NeedGuests(t)
	const cluster = "e2e-dcreds"
	args := []string{"--namespace", namespace, "--service-account", "driver-start"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...) })
	r := newRM(t, cluster)
	r.env = append(r.env, "HARVESTER_KUBECONFIG_CONTENT="+b64(kc))
	name := cluster + "-pool1-s0000"
	withDocker(t, name)
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	r.mustRun("stop", name)
	r.mustRun("start", name)
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after start: status %q", s)
	}
	r.mustRun("rm", "-y", name)
}
