package driver_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// tokenCredential is a kubeconfig whose user is a ServiceAccount token
// (bound to cluster-admin), like a Rancher or Harvester token in a cloud
// credential; revoke deletes its token Secret.
type tokenCredential struct {
	kubeconfig string
	token      string
	revoke     func()
}

func newTokenCredential(t *testing.T, sa string) tokenCredential {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	core := kube.CoreV1()
	if _, err := core.ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sa + "-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type: corev1.SecretTypeServiceAccountToken}
	if _, err := core.Secrets(namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = kube.RbacV1().ClusterRoleBindings().Delete(bg, sa, metav1.DeleteOptions{})
		_ = core.Secrets(namespace).Delete(bg, secret.Name, metav1.DeleteOptions{})
		_ = core.ServiceAccounts(namespace).Delete(bg, sa, metav1.DeleteOptions{})
	})
	secrets := kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, core.Secrets(namespace))
	filled, err := kubeapi.Wait(ctx, secrets, namespace, secret.Name, 0, func(s *corev1.Secret) (bool, error) {
		return s != nil && len(s.Data[corev1.ServiceAccountTokenKey]) > 0, nil
	})
	if err != nil {
		t.Fatalf("token of %s never filled: %v", sa, err)
	}
	token := string(filled.Data[corev1.ServiceAccountTokenKey])
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, token
	}
	kc, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := tokenCredential{kubeconfig: string(kc), token: token}
	c.revoke = func() {
		t.Helper()
		if err := core.Secrets(namespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRejected(t, c.kubeconfig)
	}
	return c
}

// clientOf is a client of a kubeconfig's content.
func clientOf(t *testing.T, kc string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kc))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// waitRejected polls until the API server rejects the kubeconfig's token:
// it caches successful token authentications for about 10 s, and reports
// the end of that cache through no watch.
func waitRejected(t *testing.T, kc string) {
	t.Helper()
	cs := clientOf(t, kc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Fatalf("revoked token still accepted: %v", err)
	}
}

// TestCredentialRevokedMidLife: the cloud credential's token is revoked
// after create. create, status, ip, stop and rm with it each fail quickly
// saying the credential was rejected and how to renew it; rm with a
// renewed credential in the environment then removes everything.
func TestCredentialRevokedMidLife(t *testing.T) {
	t.Parallel()
	cred := newTokenCredential(t, "e2e-revoked-admin")
	revoked := []string{"HARVESTER_KUBECONFIG_CONTENT=" + b64(cred.kubeconfig)}
	r := newRM(t, "e2e-revoked")
	name := "e2e-revoked-pool1-r0000"
	if out, err := r.createEnv(revoked, name, imageAndNet...); err != nil {
		t.Fatalf("create with the token credential: %v\n%s", err, out)
	}
	cred.revoke()

	for _, args := range [][]string{
		{"status", name}, {"ip", name}, {"stop", name}, {"rm", "-y", name},
		{"create", "-d", "harvester", "--harvester-cluster-name=e2e-revoked", imageAndNet[0], imageAndNet[1], "e2e-revoked-pool1-r0001"},
	} {
		start := time.Now()
		out, err := r.runEnv(revoked, args...)
		mustFail(t, out, err, "credentials rejected by Harvester (401 Unauthorized)", "5827",
			"put it in the cloud credential (--harvester-kubeconfig-content / HARVESTER_KUBECONFIG_CONTENT)")
		if took := time.Since(start); took > time.Minute {
			t.Errorf("%s took %s with a rejected credential", args[0], took)
		}
		if strings.Contains(out, cred.token) {
			t.Errorf("%s printed the token", args[0])
		}
	}
	if s := status(t, r, name); s != "Running" {
		t.Errorf("with the renewed credential: status %q, want Running (the failed stop must not have stopped it)", s)
	}
	r.mustRun("rm", "-y", "--update-config", name) // r's environment has the renewed (admin) credential
}

// TestBrokenCredentialKeepsMachine (issue 24 case 0): a credential whose
// kubeconfig names a current-context it does not define fails rm (with and
// without --update-config) and status, saying what is wrong; rancher-machine
// keeps the machine (the error never says "not found", which it reads as
// "already gone"), and the VM, VMI, disk and Secret stay until an rm with
// the right credential removes them.
func TestBrokenCredentialKeepsMachine(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-brokencred")
	name := "e2e-brokencred-pool1-b0000"
	r.mustCreate(name, imageAndNet...)
	want := objectsOf(t, name)
	broken := []string{"HARVESTER_KUBECONFIG_CONTENT=" + b64(strings.Replace(kubeconfig, "current-context: ", "current-context: gone-", 1))}
	if strings.Count(kubeconfig, "current-context: ") != 1 {
		t.Fatalf("the admin kubeconfig has no single current-context:\n%s", kubeconfig)
	}
	for _, args := range [][]string{{"rm", "-y", name}, {"rm", "-y", "--update-config", name}, {"status", name}, {"status", "--update-config", name}} {
		out, err := r.runEnv(broken, args...)
		mustFail(t, out, err, "--harvester-kubeconfig-content", `current-context "gone-`, "names no context of the kubeconfig")
		if strings.Contains(strings.ToLower(out), "not found") || strings.Contains(out, "Successfully removed") {
			t.Errorf("%v: rancher-machine was told the machine is gone:\n%s", args, out)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 4 {
			t.Errorf("%v: exit 4 (machine not found)", args)
		}
	}
	if ls := strings.Fields(r.stdout("ls", "-q")); len(ls) != 1 || ls[0] != name {
		t.Errorf("rancher-machine lists %v, want %s", ls, name)
	}
	assertSame(t, name, want, "rm with a broken credential")
	getVMI(t, name)
	if stored := storedKubeconfig(t, r, name); strings.Contains(stored, "gone-") {
		t.Errorf("status --update-config stored the broken credential")
	}
	r.mustRun("rm", "-y", "--update-config", name)
}
