package bootstrap_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const managedSelector = "app.kubernetes.io/managed-by=harvester-bootstrap,harvester-bootstrap.harvesterhci.io/guest-cluster="

func whoami(ctx context.Context, cs kubernetes.Interface) (string, error) {
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

func allowed(t *testing.T, ctx context.Context, cs kubernetes.Interface, ra authzv1.ResourceAttributes) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectAccessReview %+v: %v", ra, err)
	}
	return r.Status.Allowed
}

// waitUnauthorized polls until the token is rejected; the API server caches
// successful token authentications for about 10 s.
func waitUnauthorized(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx, cs)
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Fatalf("old token still authenticates: %v", err)
	}
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestKubeconfigAuthenticatesWithExactlyTheNeededRights(t *testing.T) {
	ctx := ctxT(t)
	out := tempFile(t, "cloud-config")
	r := mustRun(t, "kubeconfig", "--cluster-name", "e2e-auth", "--namespace", "default", "-o", out)
	if m := fileMode(t, out); m != 0o600 {
		t.Errorf("kubeconfig file mode %o, want 600", m)
	}
	kc, err := clientcmd.LoadFromFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ctxName := kc.CurrentContext
	if kc.Contexts[ctxName] == nil || kc.Contexts[ctxName].Namespace != "default" {
		t.Errorf("context namespace: %+v", kc.Contexts[ctxName])
	}
	for _, u := range kc.AuthInfos {
		if u.Token == "" || strings.Contains(r.stderr, u.Token) || strings.Contains(r.stdout, u.Token) {
			t.Errorf("token empty or printed (stdout/stderr)")
		}
	}
	_, cs := guestClient(t, out)
	user, err := whoami(ctx, cs)
	if err != nil || user != "system:serviceaccount:default:e2e-auth" {
		t.Fatalf("whoami = %q, %v", user, err)
	}

	// Everything the two Harvester roles grant is allowed in the VM namespace
	// (a rule limited to some names, for those names).
	for _, role := range []string{"harvesterhci.io:cloudprovider", "harvesterhci.io:csi-driver"} {
		cr, err := admin.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("simulator lacks ClusterRole %s: %v", role, err)
		}
		for _, rule := range cr.Rules {
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, v := range rule.Verbs {
						for _, name := range names {
							ra := authzv1.ResourceAttributes{Namespace: "default", Group: g, Resource: resource, Subresource: sub, Verb: v, Name: name}
							if !allowed(t, ctx, cs, ra) {
								t.Errorf("%s: denied %+v", role, ra)
							}
						}
					}
				}
			}
		}
	}
	// The CSI role is bound in the VM namespace; the namespace's grant
	// lets its ServiceAccounts read storage classes.
	if !allowed(t, ctx, cs, authzv1.ResourceAttributes{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "get"}) {
		t.Error("csi: storageclasses get denied (the namespace grant)")
	}
	// And nothing else.
	for _, ra := range []authzv1.ResourceAttributes{
		{Namespace: "harvester-system", Resource: "secrets", Verb: "get"},
		{Namespace: "default", Resource: "secrets", Verb: "list"},
		{Namespace: "default", Resource: "secrets", Verb: "get", Name: "e2e-auth-token"},
		{Namespace: "harvester-system", Group: "loadbalancer.harvesterhci.io", Resource: "loadbalancers", Verb: "create"},
		{Namespace: "harvester-system", Group: "kubevirt.io", Resource: "virtualmachines", Verb: "get"},
		{Namespace: "harvester-system", Resource: "pods", Verb: "list"},
		{Namespace: "default", Resource: "serviceaccounts", Subresource: "token", Verb: "create"},
		{Namespace: "default", Group: "kubevirt.io", Resource: "virtualmachines", Verb: "delete"},
		{Namespace: "default", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "create"},
		{Resource: "namespaces", Verb: "create"},
		{Resource: "nodes", Verb: "delete"},
		{Group: "harvesterhci.io", Resource: "settings", Verb: "update"},
		// Settings: only the CSI driver's two and what every user reads.
		{Group: "harvesterhci.io", Resource: "settings", Verb: "list"},
		{Group: "harvesterhci.io", Resource: "settings", Verb: "get", Name: "http-proxy"},
	} {
		if allowed(t, ctx, cs, ra) {
			t.Errorf("allowed but should be denied: %+v", ra)
		}
	}
	if _, err := cs.CoreV1().Secrets("harvester-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets in harvester-system: want Forbidden, got %v", err)
	}
}

type snapshot map[string]string

func accessSnapshot(t *testing.T, ctx context.Context, cluster string) snapshot {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: managedSelector + cluster}
	s := snapshot{}
	sas, err := admin.CoreV1().ServiceAccounts("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sas.Items {
		s["sa/"+o.Namespace+"/"+o.Name] = o.ResourceVersion
	}
	secs, _ := admin.CoreV1().Secrets("").List(ctx, sel)
	for _, o := range secs.Items {
		s["secret/"+o.Namespace+"/"+o.Name] = o.ResourceVersion
	}
	rbs, _ := admin.RbacV1().RoleBindings("").List(ctx, sel)
	for _, o := range rbs.Items {
		s["rb/"+o.Namespace+"/"+o.Name] = o.ResourceVersion
	}
	crbs, _ := admin.RbacV1().ClusterRoleBindings().List(ctx, sel)
	for _, o := range crbs.Items {
		s["crb/"+o.Name] = o.ResourceVersion
	}
	return s
}

func TestKubeconfigTwiceChangesNothing(t *testing.T) {
	ctx := ctxT(t)
	args := []string{"kubeconfig", "--cluster-name", "e2e-idem", "--namespace", "default", "--server", "https://10.0.0.10:6443", "--format", "base64"}
	first := mustRun(t, args...)
	before := accessSnapshot(t, ctx, "e2e-idem")
	if len(before) != 4 {
		t.Fatalf("want SA, Secret, two RoleBindings; got %v", before)
	}
	second := mustRun(t, args...)
	after := accessSnapshot(t, ctx, "e2e-idem")
	if first.stdout != second.stdout {
		t.Error("second run emitted a different kubeconfig")
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: resourceVersion %s -> %s", k, v, after[k])
		}
	}
	if len(after) != len(before) {
		t.Errorf("objects differ: %v vs %v", before, after)
	}
}

func TestRotateInvalidatesOldTokens(t *testing.T) {
	ctx := ctxT(t)
	oldFile, ttlFile, newFile := tempFile(t, "old"), tempFile(t, "ttl"), tempFile(t, "new")
	mustRun(t, "kubeconfig", "--cluster-name", "e2e-rot", "--namespace", "default", "-o", oldFile)
	mustRun(t, "kubeconfig", "--cluster-name", "e2e-rot", "--namespace", "default", "--ttl", "15m", "-o", ttlFile)
	_, oldCS := guestClient(t, oldFile)
	ttlCfg, ttlCS := guestClient(t, ttlFile)
	if ttlCfg.BearerToken == "" || strings.Count(ttlCfg.BearerToken, ".") != 2 {
		t.Fatal("ttl token is not a JWT")
	}
	for name, cs := range map[string]kubernetes.Interface{"secret token": oldCS, "ttl token": ttlCS} {
		if _, err := whoami(ctx, cs); err != nil {
			t.Fatalf("%s before rotate: %v", name, err)
		}
	}
	oldSecret, err := admin.CoreV1().Secrets("default").Get(ctx, "e2e-rot-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	mustRun(t, "kubeconfig", "rotate", "--cluster-name", "e2e-rot", "--namespace", "default", "-o", newFile)
	newSecret, err := admin.CoreV1().Secrets("default").Get(ctx, "e2e-rot-token", metav1.GetOptions{})
	if err != nil || newSecret.UID == oldSecret.UID || newSecret.Type != corev1.SecretTypeServiceAccountToken {
		t.Fatalf("token secret not replaced: %v", err)
	}
	newCfg, newCS := guestClient(t, newFile)
	oldCfg, _ := guestClient(t, oldFile)
	if newCfg.BearerToken == oldCfg.BearerToken {
		t.Fatal("rotate emitted the old token again")
	}
	if u, err := whoami(ctx, newCS); err != nil || u != "system:serviceaccount:default:e2e-rot" {
		t.Fatalf("new token: %q %v", u, err)
	}
	waitUnauthorized(t, ctx, oldCS)
	waitUnauthorized(t, ctx, ttlCS)
}

func TestRevokeLeavesNothingBehind(t *testing.T) {
	ctx := ctxT(t)
	file := tempFile(t, "kc")
	mustRun(t, "kubeconfig", "--cluster-name", "e2e-rev", "--namespace", "default", "-o", file)
	_, cs := guestClient(t, file)
	if _, err := whoami(ctx, cs); err != nil {
		t.Fatal(err)
	}
	// Bystanders: same names/prefix but not ours, or ours for another cluster.
	bystander := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-rev-notes", Namespace: "default",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "someone-else"}}}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, bystander, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "kubeconfig", "--cluster-name", "e2e-rev2", "--namespace", "default")

	r := mustRun(t, "kubeconfig", "revoke", "--cluster-name", "e2e-rev", "--namespace", "default")
	if got := accessSnapshot(t, ctx, "e2e-rev"); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
	for _, name := range []string{"e2e-rev", "e2e-rev-token", "e2e-rev-cloudprovider"} {
		if _, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("service account %s still exists", name)
		}
	}
	if _, err := admin.CoreV1().Secrets("default").Get(ctx, "e2e-rev-notes", metav1.GetOptions{}); err != nil {
		t.Errorf("revoke deleted an object it does not own: %v", err)
	}
	if got := accessSnapshot(t, ctx, "e2e-rev2"); len(got) != 4 {
		t.Errorf("revoke touched another cluster's objects: %v", got)
	}
	waitUnauthorized(t, ctx, cs)
	if !strings.Contains(r.stderr, "deleted") {
		t.Errorf("revoke logged nothing: %s", r.stderr)
	}
	again := mustRun(t, "kubeconfig", "revoke", "--cluster-name", "e2e-rev", "--namespace", "default")
	if !strings.Contains(again.stderr, "nothing to revoke") {
		t.Errorf("second revoke: %s", again.stderr)
	}
}

func TestKubeconfigRefusesForeignObjects(t *testing.T) {
	ctx := ctxT(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "e2e-foreign", Namespace: "default"}}
	created, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := runBin(t, "kubeconfig", "--cluster-name", "e2e-foreign", "--namespace", "default")
	if r.code == 0 || !strings.Contains(r.stderr, "not managed by harvester-bootstrap") {
		t.Fatalf("want refusal, got exit %d: %s", r.code, r.stderr)
	}
	now, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "e2e-foreign", metav1.GetOptions{})
	if err != nil || now.ResourceVersion != created.ResourceVersion {
		t.Errorf("foreign service account was changed: %v", err)
	}
	if got := accessSnapshot(t, ctx, "e2e-foreign"); len(got) != 0 {
		t.Errorf("created objects despite refusing: %v", got)
	}
}

func TestCLIErrors(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"kubeconfig"}, []string{"cluster-name: required", "namespace: required"}},
		{[]string{"kubeconfig", "--cluster-name", "x", "--namespace", "default", "--ttl", "1m"}, []string{"ttl 1m0s: must be at least 10m"}},
		{[]string{"kubeconfig", "--cluster-name", "x", "--namespace", "default", "--kubeconfig", "/nonexistent/kc"}, []string{"load kubeconfig"}},
		{[]string{"kubeconfig", "--cluster-name", "x", "--namespace", "default", "--format", "xml"}, []string{"format \"xml\""}},
		{[]string{"apply", "--cluster-name", "x"}, []string{"guest-kubeconfig: required"}},
		// driver-credential checks every flag and namespace before it makes anything (issue 30, item 7).
		{[]string{"driver-credential", "--namespace", "default", "--service-account", "e2e-early", "--ttl", "1200000h", "--server", "http://plain"},
			[]string{"must be at most", "server"}},
		{[]string{"driver-credential", "--namespace", "default", "--service-account", "e2e-early", "--machine-namespace", "no-such-ns"},
			[]string{`--machine-namespace "no-such-ns": no such namespace`}},
		{[]string{"nodedriver", "--url", "https://x"}, []string{"exactly one argument BINARY"}},
		{[]string{"lb", "pool", "--range", "10.0.0.0/24", "--range", "10.0.0.8/29", "--name", "p"}, []string{"overlaps"}},
	}
	for _, c := range cases {
		r := runBin(t, c.args...)
		if r.code == 0 {
			t.Errorf("%v: exit 0", c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, r.stderr)
			}
		}
	}
	if _, err := admin.CoreV1().ServiceAccounts("default").Get(context.Background(), "e2e-early", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused driver-credential made its ServiceAccount: %v", err)
	}
	// A namespace without the token controller's reach never fills: the wait ends with a clear timeout.
	r := runBin(t, "kubeconfig", "--cluster-name", "e2e-missing-ns", "--namespace", "no-such-namespace", "--timeout", "5s")
	if r.code == 0 || !strings.Contains(r.stderr, "no-such-namespace") {
		t.Errorf("missing namespace: exit %d: %s", r.code, r.stderr)
	}
}

// TestRevokeOneServiceAccount (issue 7 case 4): revoke --service-account X
// removes exactly what `kubeconfig` made for X; another service account of
// the same cluster keeps its objects and its token keeps working.
func TestRevokeOneServiceAccount(t *testing.T) {
	ctx := ctxT(t)
	const cluster = "e2e-rev-sa"
	ccm, csi := tempFile(t, "ccm"), tempFile(t, "csi")
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", "default", "--service-account", "e2e-rev-sa-ccm", "-o", ccm)
	mustRun(t, "kubeconfig", "--cluster-name", cluster, "--namespace", "default", "--service-account", "e2e-rev-sa-csi", "-o", csi)
	_, ccmCS := guestClient(t, ccm)
	_, csiCS := guestClient(t, csi)
	before := accessSnapshot(t, ctx, cluster)
	if len(before) != 8 {
		t.Fatalf("want 4 objects per service account, got %v", before)
	}

	r := mustRun(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", "default", "--service-account", "e2e-rev-sa-ccm")
	after := accessSnapshot(t, ctx, cluster)
	want := snapshot{}
	for k, v := range before {
		if !strings.Contains(k, "e2e-rev-sa-ccm") {
			want[k] = v
		}
	}
	if len(want) != 4 || !reflect.DeepEqual(after, want) {
		t.Errorf("after revoke: %v, want exactly the other service account's unchanged: %v", after, want)
	}
	for _, obj := range []string{"serviceaccounts/default/e2e-rev-sa-ccm", "secrets/default/e2e-rev-sa-ccm-token",
		"rolebindings/default/e2e-rev-sa-ccm-cloudprovider", "rolebindings/default/e2e-rev-sa-ccm-csi-driver"} {
		if !strings.Contains(r.stderr, obj) {
			t.Errorf("revoke does not report deleting %s:\n%s", obj, r.stderr)
		}
	}
	waitUnauthorized(t, ctx, ccmCS)
	if u, err := whoami(ctx, csiCS); err != nil || u != "system:serviceaccount:default:e2e-rev-sa-csi" {
		t.Errorf("the other service account's token stopped working: %q %v", u, err)
	}
	mustRun(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", "default", "--service-account", "e2e-rev-sa-csi")
	if got := accessSnapshot(t, ctx, cluster); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}
