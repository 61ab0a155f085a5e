package driver_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
)

// The attacks of issue 33, items 2 and 4, are written with client-go and
// the CLI only, in the names Kubernetes and Harvester give things, so the
// same test runs against the code before the fix (where each attack
// succeeded).
const (
	attackNS       = "e2e-attack"     // the driver's machine namespace
	attackDriverNS = "e2e-attack-drv" // the driver's ServiceAccount lives here
	attackDriver   = "e2e-attack-drv"
	victimSA       = "e2e-victim" // a ServiceAccount the tool never made
	toolLabel      = "app.kubernetes.io/managed-by"
	guestLabel     = "harvester-bootstrap.harvesterhci.io/guest-cluster"
)

func mustNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// bootstrapErr runs bin/harvester-bootstrap with the admin kubeconfig and
// returns its output and error.
func bootstrapErr(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), append(args, "--kubeconfig", sim.Kubeconfig)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// refused fails unless err is the API server's 403 (RBAC or admission).
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("driver credential: %s: want Forbidden, got %v", what, err)
	} else {
		t.Logf("refused as it must be: %s: %v", what, err)
	}
}

// TestDriverCredentialCannotTakeTokens (issue 33, items 2 and 4): with the
// real credential of `driver-credential --cloud-provider`, mint a token for
// a ServiceAccount the tool never made (a plain token Secret, one dressed
// in the tool's labels, a TokenRequest, a VM mounting its token), relabel
// it as a guest's, and bind the guest roles (or the driver's own Role) to
// everyone or to it. Every request must be refused; the guest credential
// the driver makes as --harvester-cloud-provider does still works, and
// revoke deletes its token and names the token it did not make.
func TestDriverCredentialCannotTakeTokens(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mustNamespace(t, ctx, attackNS)
	mustNamespace(t, ctx, attackDriverNS)
	args := []string{"--namespace", attackDriverNS, "--service-account", attackDriver, "--machine-namespace", attackNS, "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { _, _ = bootstrapErr(append([]string{"driver-credential", "revoke"}, args...)...) })
	drv := clientOf(t, kc)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	drvDyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	// The victim: someone else's ServiceAccount, with rights of its own.
	if _, err := kube.CoreV1().ServiceAccounts(attackNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: victimSA}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts(attackNS).Delete(context.Background(), victimSA, metav1.DeleteOptions{})
	})
	victim, err := kube.CoreV1().ServiceAccounts(attackNS).Get(ctx, victimSA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 1. A plain token Secret for the victim.
	tokenSecret := func(name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: victimSA}}, Type: corev1.SecretTypeServiceAccountToken}
	}
	cleanupSecret := func(name string) {
		t.Cleanup(func() { _ = kube.CoreV1().Secrets(attackNS).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	cleanupSecret("e2e-minted")
	_, err = drv.CoreV1().Secrets(attackNS).Create(ctx, tokenSecret("e2e-minted", nil), metav1.CreateOptions{})
	refused(t, "create a service-account-token Secret for "+victimSA, err)

	// 2. The same, dressed as a guest credential of this tool (its labels,
	// its name rule, even the driver's own issued-by label, and the
	// victim's UID, which the policy demands since issue 41). The policy
	// judges the target by the namespace's ServiceAccounts as its params,
	// which kube-apiserver reads from a cache: a ServiceAccount created a
	// moment ago may not be in it yet (docs/reliability.md). Wait, with
	// dry runs, until the victim is, as it is for any account that exists
	// before the attack.
	dressed := map[string]string{toolLabel: "harvester-bootstrap", guestLabel: victimSA,
		"harvester-bootstrap.harvesterhci.io/issued-by-driver": attackDriverNS + "." + attackDriver}
	cleanupSecret(victimSA + "-token")
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	withUID := tokenSecret(victimSA+"-token", dressed)
	withUID.Annotations[corev1.ServiceAccountUIDKey] = string(victim.UID)
	for {
		_, err := drv.CoreV1().Secrets(attackNS).Create(ctx, withUID, dry)
		if apierrors.IsForbidden(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = drv.CoreV1().Secrets(attackNS).Create(ctx, withUID, metav1.CreateOptions{})
	refused(t, "create a token Secret for "+victimSA+" in the tool's labels, with its UID", err)
	if err != nil && !strings.Contains(err.Error(), "ServiceAccount "+victimSA+" is not a guest credential") {
		t.Errorf("refused for another reason than the victim's: %v", err)
	}

	// 3. A TokenRequest.
	_, err = drv.CoreV1().ServiceAccounts(attackNS).CreateToken(ctx, victimSA, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	refused(t, "request a token (TokenRequest) for "+victimSA, err)

	// 4. Make the victim look like a guest ServiceAccount of this tool.
	relabel := []byte(`{"metadata":{"labels":{"` + toolLabel + `":"harvester-bootstrap","` + guestLabel + `":"` + victimSA + `"}}}`)
	_, err = drv.CoreV1().ServiceAccounts(attackNS).Patch(ctx, victimSA, types.MergePatchType, relabel, metav1.PatchOptions{})
	refused(t, "label "+victimSA+" as a guest ServiceAccount", err)

	// 5. A VM mounting the victim's token as a disk (KubeVirt's
	// serviceAccount volume).
	vmGVR := schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	vm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "e2e-token-thief"},
		"spec": map[string]any{"runStrategy": "Halted", "template": map[string]any{"spec": map[string]any{
			// A guest memory, so that Harvester's validator has nothing to refuse:
			// the refusal is the credential's.
			"domain": map[string]any{"memory": map[string]any{"guest": "1Gi"},
				"devices": map[string]any{"disks": []any{map[string]any{"name": "sa", "disk": map[string]any{}}}}},
			"volumes": []any{map[string]any{"name": "sa", "serviceAccount": map[string]any{"serviceAccountName": victimSA}}},
		}}},
	}}
	t.Cleanup(func() {
		_ = dynAdmin.Resource(vmGVR).Namespace(attackNS).Delete(context.Background(), "e2e-token-thief", metav1.DeleteOptions{})
	})
	_, err = drvDyn.Resource(vmGVR).Namespace(attackNS).Create(ctx, vm, metav1.CreateOptions{})
	refused(t, "create a VM with a serviceAccount volume of "+victimSA, err)

	// 6. Bindings: the CSI role to every authenticated user, the driver's
	// own Role (secrets get) to every authenticated user, and the CSI role
	// to the victim in the tool's dress.
	everyone := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}}
	bindings := []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-csi-for-everyone"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harvesterhci.io:csi-driver"}, Subjects: everyone},
		{ObjectMeta: metav1.ObjectMeta{Name: "e2e-driver-role-for-everyone"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "harvester-bootstrap:driver:" + attackDriverNS + ":" + attackDriver}, Subjects: everyone},
		{ObjectMeta: metav1.ObjectMeta{Name: victimSA + "-csi-driver", Labels: dressed}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harvesterhci.io:csi-driver"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: victimSA, Namespace: attackNS}}},
	}
	for _, rb := range bindings {
		t.Cleanup(func() {
			_ = kube.RbacV1().RoleBindings(attackNS).Delete(context.Background(), rb.Name, metav1.DeleteOptions{})
		})
		_, err := drv.RbacV1().RoleBindings(attackNS).Create(ctx, rb, metav1.CreateOptions{})
		refused(t, "create RoleBinding "+rb.Name+" of "+rb.RoleRef.Name, err)
	}

	// What --harvester-cloud-provider does with this credential still works.
	checkDriverMakesGuestCredential(t, ctx, kc, attackGuest, attackNS)

	// Someone else's token Secret in the namespace: revoke names it and
	// deletes the guest token the driver made.
	foreign := tokenSecret("e2e-foreign-token", nil)
	if _, err := kube.CoreV1().Secrets(attackNS).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cleanupSecret(foreign.Name)
	out := bootstrap(t, append([]string{"driver-credential", "revoke"}, args...)...)
	if !strings.Contains(out, attackNS+"/"+foreign.Name) {
		t.Errorf("revoke did not name the token Secret it did not make:\n%s", out)
	}
	if _, err := kube.CoreV1().Secrets(attackNS).Get(ctx, attackGuest+"-token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the guest token Secret the driver made survived revoke: %v", err)
	}
	if _, err := kube.CoreV1().Secrets(attackNS).Get(ctx, foreign.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("revoke deleted a token Secret it did not make: %v", err)
	}
	for _, name := range []string{"harvester-bootstrap-driver." + attackDriverNS + "." + attackDriver} {
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("policy %s after revoke: %v", name, err)
		}
	}
}

const attackGuest = "e2e-attack-guest"

// checkDriverMakesGuestCredential makes a guest credential of cluster in
// ns with the driver credential through the driver itself (rancher-machine
// create with --harvester-cloud-provider would need a VM; the driver's
// code path is the same call), checks its token works and returns its
// filled token Secret and Access; revoked after the test.
func checkDriverMakesGuestCredential(t *testing.T, ctx context.Context, kc, cluster, ns string) (*corev1.Secret, credentials.Access) {
	t.Helper()
	t.Cleanup(func() {
		_, _ = bootstrapErr("kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", ns)
	})
	h, a := issueGuestAsDriver(t, ctx, kc, cluster, ns)
	sec, err := h.TokenSecret(ctx, a)
	if err != nil {
		t.Fatalf("the guest token Secret the driver made: %v", err)
	}
	cfg := rest.AnonymousClientConfig(h.Config)
	cfg.BearerToken = string(sec.Data[corev1.ServiceAccountTokenKey])
	guest, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !can(t, ctx, guest, "patch", "kubevirt.io", "virtualmachines", ns) {
		t.Errorf("the guest credential the driver made may not patch VMs in %s", ns)
	}
	return sec, a
}
