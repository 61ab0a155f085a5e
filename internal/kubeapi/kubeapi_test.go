package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var rejected = &CredentialsRejectedError{Source: "--kubeconfig", After: "then run it again"}

func TestIsUnauthorizedByType(t *testing.T) {
	status := &apierrors.StatusError{ErrStatus: metav1.Status{Code: 401, Message: "no reason given"}}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"401 status":              {apierrors.NewUnauthorized("token expired"), true},
		"401 code without reason": {status, true},
		"wrapped 401":             {fmt.Errorf("get VM: %w", apierrors.NewUnauthorized("x")), true},
		"403":                     {apierrors.NewForbidden(corev1.Resource("secrets"), "s", errors.New("no")), false},
		"text only":               {errors.New("Unauthorized"), false},
		"nil":                     {nil, false},
	}
	for name, c := range cases {
		if got := IsUnauthorized(c.err); got != c.want {
			t.Errorf("%s: IsUnauthorized = %v", name, got)
		}
	}
}

func TestExplainAndWrap(t *testing.T) {
	err := Explain("get VM", apierrors.NewUnauthorized("expired"), rejected)
	for _, want := range []string{"get VM: ", "401", "5827", "expired", "put it in --kubeconfig", "then run it again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("explained error lacks %q: %v", want, err)
		}
	}
	if !errors.Is(err, ErrCredentialsRejected) {
		t.Error("errors.Is(ErrCredentialsRejected) false")
	}
	if again := Explain("outer", err, rejected); again != err { //nolint:errorlint // the very same error, not one wrapping it
		t.Errorf("explained twice: %v", again)
	}
	if e := Explain("get VM", apierrors.NewNotFound(corev1.Resource("vm"), "x"), rejected); errors.Is(e, ErrCredentialsRejected) || !apierrors.IsNotFound(e) {
		t.Errorf("not found: %v", e)
	}
	if Explain("op", nil, rejected) != nil {
		t.Error("nil explained")
	}
	w := rejected.Wrap(fmt.Errorf("apply: %w", apierrors.NewUnauthorized("x")))
	if !errors.Is(w, ErrCredentialsRejected) || !apierrors.IsUnauthorized(w) {
		t.Errorf("wrap: %v", w)
	}
	plain := errors.New("boom")
	if rejected.Wrap(plain) != plain { //nolint:errorlint // the very same error
		t.Error("wrap changed a non-401 error")
	}
}

func TestWaitSeesCreationAndDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kube := fake.NewClientset()
	secrets := kube.CoreV1().Secrets("ns")
	k := KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, secrets)
	// The fake's watch starts from now, not from the list's resource
	// version: objects made between Wait's list and its watch would be
	// missed. They are made once the watch is registered.
	watching := make(chan struct{})
	var once sync.Once
	kube.PrependWatchReactor("secrets", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := kube.Tracker().Watch(a.GetResource(), a.GetNamespace())
		once.Do(func() { close(watching) })
		return true, w, err
	})
	go func() {
		<-watching
		_, _ = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}}, metav1.CreateOptions{})
		_, _ = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"token": []byte("t")}}, metav1.CreateOptions{})
	}()
	got, err := Wait(ctx, k, "ns", "s", time.Second, func(s *corev1.Secret) (bool, error) {
		return s != nil && len(s.Data["token"]) > 0, nil
	})
	if err != nil || got.Name != "s" {
		t.Fatalf("wait for creation: %v %v", got, err)
	}
	if err := secrets.Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Wait(ctx, k, "ns", "s", time.Second, func(s *corev1.Secret) (bool, error) { return s == nil, nil }); err != nil {
		t.Fatalf("wait for deletion: %v", err)
	}
	stop := errors.New("stop")
	if _, err := Wait(ctx, k, "ns", "other", time.Second, func(*corev1.Secret) (bool, error) { return false, stop }); !errors.Is(err, stop) {
		t.Errorf("cond error: %v", err)
	}
}

// TestWaitListsConsistently: the reflector's first list asks for
// resourceVersion "0", which kube-apiserver may answer from a watch cache
// older than a write just made; Wait's list asks for a consistent read
// ("") instead, and leaves a relist's resource version alone.
func TestWaitListsConsistently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kube := fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}})
	secrets := kube.CoreV1().Secrets("ns")
	k := KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, secrets)
	var asked []metav1.ListOptions
	list := k.List
	k.List = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		asked = append(asked, o)
		return list(ctx, o)
	}
	if _, err := Wait(ctx, k, "ns", "s", time.Second, func(s *corev1.Secret) (bool, error) { return s != nil, nil }); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].ResourceVersion != "" || asked[0].ResourceVersionMatch != "" || asked[0].FieldSelector != "metadata.name=s" {
		t.Errorf("lists asked %+v, want one consistent read (resourceVersion \"\") of metadata.name=s", asked)
	}
	relist := metav1.ListOptions{ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	asked = nil
	if _, err := NamedListWatch(k, "s", 0).ListWithContext(ctx, relist); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].ResourceVersion != "42" || asked[0].ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
		t.Errorf("relist asked %+v, want resourceVersion 42 NotOlderThan kept", asked)
	}
}
