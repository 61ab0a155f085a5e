package sim_test

import (
	"context"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	secretGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// The serviceaccount-token controller fills token Secrets, and the token
// authenticates as the ServiceAccount.
func TestServiceAccountTokenSecretGetsWorkingToken(t *testing.T) {
	ctx := testContext(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "token-test", Namespace: "default"}}
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts("default").Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
	})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token-test-token", Namespace: "default",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if _, err := kube.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := simtest.WaitObject(ctx, dyn, secretGVR, "default", secret.Name, func(u *unstructured.Unstructured) bool {
		tok, _, _ := unstructured.NestedString(u.Object, "data", "token")
		return tok != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := kube.CoreV1().Secrets("default").Get(ctx, secret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := tokenConfig(t, string(got.Data["token"]))
	review, err := kubernetes.NewForConfigOrDie(saCfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token from the Secret does not authenticate: %v", err)
	}
	if u := review.Status.UserInfo.Username; u != "system:serviceaccount:default:token-test" {
		t.Errorf("token authenticates as %q", u)
	}
}

// Garbage collection cascades through ownerReferences, also in foreground.
func TestOwnerReferencesCascadeInForeground(t *testing.T) {
	ctx := testContext(t)
	owner, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gc-child", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr(true),
	}}}}
	if _, err := kube.CoreV1().Secrets("default").Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps("default").Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	if err := simtest.WaitObject(ctx, dyn, secretGVR, "default", "gc-child", simtest.Gone); err != nil {
		t.Fatal(err)
	}
	if err := simtest.WaitObject(ctx, dyn, configMapGVR, "default", "gc-owner", simtest.Gone); err != nil {
		t.Fatalf("foreground deletion did not complete: %v", err)
	}
}

func TestNamespaceDeletionCompletes(t *testing.T) {
	ctx := testContext(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns-delete-test"}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "content", Namespace: ns.Name}}
	if _, err := kube.CoreV1().ConfigMaps(ns.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := simtest.WaitObject(ctx, dyn, namespaceGVR, "", ns.Name, simtest.Gone); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
