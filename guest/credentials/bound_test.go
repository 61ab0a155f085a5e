package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// TestEnsureAccessBindsTheTokenToTheAccountsUID (issue 41): the token
// Secret is applied after the ServiceAccount, carrying the UID the API
// server answered the ServiceAccount's apply with, and with no more
// requests than before (a get and an apply per object).
func TestEnsureAccessBindsTheTokenToTheAccountsUID(t *testing.T) {
	kube := fake.NewSimpleClientset()
	var order []string
	var secret corev1.Secret
	kube.PrependReactor("patch", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		p := action.(k8stesting.PatchAction)
		order = append(order, p.GetResource().Resource)
		meta := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: p.GetName()}
		switch p.GetResource().Resource {
		case "serviceaccounts":
			meta.UID = "sa-uid-1"
			return true, &corev1.ServiceAccount{ObjectMeta: meta}, nil
		case "secrets":
			if err := json.Unmarshal(p.GetPatch(), &secret); err != nil {
				t.Fatal(err)
			}
			return true, &corev1.Secret{ObjectMeta: meta}, nil
		}
		return true, &rbacv1.RoleBinding{ObjectMeta: meta}, nil
	})
	h := &Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}
	a := Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults()
	if err := h.EnsureAccess(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if len(order) != 4 || order[0] != "serviceaccounts" || order[3] != "secrets" {
		t.Fatalf("applies %v, want the ServiceAccount first and the token Secret last", order)
	}
	if got := secret.Annotations[corev1.ServiceAccountUIDKey]; got != "sa-uid-1" || secret.Annotations[corev1.ServiceAccountNameKey] != a.ServiceAccount {
		t.Errorf("token Secret annotations %v, want %s=sa-uid-1 and the name", secret.Annotations, corev1.ServiceAccountUIDKey)
	}
	if n := len(kube.Actions()); n != 8 {
		t.Errorf("%d requests, want 8 (a get and an apply of each of the four objects)", n)
	}
}

func TestBoundTo(t *testing.T) {
	sec := BuildAccess(Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults()).TokenSecret
	if BoundTo(sec, "") != sec {
		t.Error("BoundTo without a UID changed the Secret")
	}
	b := BoundTo(sec, "u1")
	if b.Annotations[corev1.ServiceAccountUIDKey] != "u1" || sec.Annotations[corev1.ServiceAccountUIDKey] != "" {
		t.Errorf("BoundTo: %v, original %v", b.Annotations, sec.Annotations)
	}
	if !IsGuestTokenSecret(*b) {
		t.Error("a bound token Secret is no longer recognised as a guest's")
	}
}

// TestEnsureAccessWaitsForTheParamsCache: while a driver credential's
// policy refuses the token Secret for an earlier ServiceAccount's UID (its
// parameter cache still holds it), EnsureAccess asks again; any other
// refusal ends it at once.
func TestEnsureAccessWaitsForTheParamsCache(t *testing.T) {
	for _, c := range []struct {
		msg   string
		tries int
		ok    bool
	}{
		{"ServiceAccount guest-a has UID old, not sa-uid-1: " + refusedOtherUID, 3, true},
		{"ServiceAccount guest-a is not a guest credential of harvester-bootstrap", 1, false},
	} {
		kube := fake.NewSimpleClientset()
		tries := 0
		kube.PrependReactor("patch", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
			p := action.(k8stesting.PatchAction)
			meta := metav1.ObjectMeta{Namespace: p.GetNamespace(), Name: p.GetName(), UID: "sa-uid-1"}
			switch p.GetResource().Resource {
			case "serviceaccounts":
				return true, &corev1.ServiceAccount{ObjectMeta: meta}, nil
			case "rolebindings":
				return true, &rbacv1.RoleBinding{ObjectMeta: meta}, nil
			}
			if tries++; tries < 3 {
				return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), p.GetName(), errors.New(c.msg))
			}
			return true, &corev1.Secret{ObjectMeta: meta}, nil
		})
		h := &Harvester{Client: restapifake.Clients{Kube: kube}, Log: slog.New(slog.DiscardHandler)}
		err := h.EnsureAccess(context.Background(), Access{ClusterName: "guest-a", Namespace: "guests"}.WithDefaults())
		if (err == nil) != c.ok || tries != c.tries {
			t.Errorf("%q: EnsureAccess = %v after %d tries, want ok %v after %d", c.msg, err, tries, c.ok, c.tries)
		}
	}
}
