package driver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestDriverTokenSecretNeedsTheGuestsUID (issue 41, "the driver
// credential's token-Secret race"), by attack with the real credential of
// `driver-credential --cloud-provider`: a token Secret in the tool's dress
// for a ServiceAccount name nobody has yet was admitted, and an admin
// creating that account before the token controller synced the Secret got
// its token handed to the driver. Now every token Secret of the driver
// must carry the UID of the guest ServiceAccount it names:
//   - (a) for a name nobody has, without a UID: refused;
//   - (b) the race: with a UID (one nobody has: an account that does not
//     exist has none), then the admin creates the account at once: never
//     filled, deleted by the token controller (another UID), five times;
//   - (c) another account's UID, under the guest's name or its own, or the
//     guest's UID under another account's name: refused;
//
// and the guest credential the driver makes carries its account's UID and
// works, also made again at once after its account was deleted.
func TestDriverTokenSecretNeedsTheGuestsUID(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns, drvNS, drvSA, guestCluster = "e2e-race", "e2e-race-drv", "e2e-race-drv", "e2e-race-guest"
	mustNamespace(t, ctx, ns)
	mustNamespace(t, ctx, drvNS)
	args := []string{"--namespace", drvNS, "--service-account", drvSA, "--machine-namespace", ns, "--cloud-provider"}
	kc := issueDriverCredential(t, args...)
	t.Cleanup(func() { _, _ = bootstrapErr(append([]string{"driver-credential", "revoke"}, args...)...) })
	drv := clientOf(t, kc)
	token := func(sa, uid string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sa + "-token",
			Labels:      map[string]string{toolLabel: "harvester-bootstrap", guestLabel: sa, "harvester-bootstrap.harvesterhci.io/issued-by-driver": drvNS + "." + drvSA},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}}, Type: corev1.SecretTypeServiceAccountToken}
		if uid != "" {
			s.Annotations[corev1.ServiceAccountUIDKey] = uid
		}
		t.Cleanup(func() { _ = kube.CoreV1().Secrets(ns).Delete(context.Background(), s.Name, metav1.DeleteOptions{}) })
		return s
	}
	// refusedFor: refused saying one of why (each ServiceAccount of the
	// namespace is judged in turn; the first refusal is the answer).
	refusedFor := func(what string, err error, why ...string) {
		t.Helper()
		refused(t, what, err)
		if err != nil && !slices.ContainsFunc(why, func(w string) bool { return strings.Contains(err.Error(), w) }) {
			t.Errorf("%s: refused without saying any of %q: %v", what, why, err)
		}
	}

	// The guest credential the driver makes (--harvester-cloud-provider's
	// call): its token Secret carries its account's UID and is filled.
	sec, a := checkDriverMakesGuestCredential(t, ctx, kc, guestCluster, ns)
	guestSA, err := kube.CoreV1().ServiceAccounts(ns).Get(ctx, a.ServiceAccount, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sec.Annotations[corev1.ServiceAccountUIDKey]; got != string(guestSA.UID) {
		t.Errorf("guest token Secret bound to UID %q, want its ServiceAccount's %s", got, guestSA.UID)
	}

	// (a) A name nobody has, as the issue's attack made it.
	_, err = drv.CoreV1().Secrets(ns).Create(ctx, token("e2e-nobody", ""), metav1.CreateOptions{})
	refusedFor("a token Secret for e2e-nobody, which does not exist, in the tool's labels", err, "annotation "+corev1.ServiceAccountUIDKey+" the UID of that guest ServiceAccount")

	// (b) The race of the issue, with the only UID such a Secret can carry.
	for i := range 5 {
		raceOnce(t, ctx, drv, ns, token(fmt.Sprintf("e2e-later-%d", i), string(uuid.NewUUID())))
	}

	// (c) Forged UIDs. The victim exists before the attack: wait (dry runs)
	// until the policy's parameters, read from a cache, hold it.
	victim, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: victimSA}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts(ns).Delete(context.Background(), victimSA, metav1.DeleteOptions{})
	})
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for {
		_, err := drv.CoreV1().Secrets(ns).Create(ctx, token(victimSA, string(victim.UID)), dry)
		if apierrors.IsForbidden(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = drv.CoreV1().Secrets(ns).Create(ctx, token(victimSA, string(victim.UID)), metav1.CreateOptions{})
	refusedFor("a token Secret for "+victimSA+" with its UID", err, "ServiceAccount "+victimSA+" is not a guest credential of harvester-bootstrap")
	if err := kube.CoreV1().Secrets(ns).Delete(ctx, a.TokenSecretName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = drv.CoreV1().Secrets(ns).Create(ctx, token(a.ServiceAccount, string(victim.UID)), metav1.CreateOptions{})
	refusedFor("a token Secret for the guest "+a.ServiceAccount+" with "+victimSA+"'s UID", err,
		"UID "+string(victim.UID)+" is ServiceAccount "+victimSA+"'s, not "+a.ServiceAccount+"'s", "ServiceAccount "+a.ServiceAccount+" has UID "+string(guestSA.UID)+", not "+string(victim.UID))
	_, err = drv.CoreV1().Secrets(ns).Create(ctx, token(victimSA, string(guestSA.UID)), metav1.CreateOptions{})
	refusedFor("a token Secret for "+victimSA+" with the guest's UID", err,
		"UID "+string(guestSA.UID)+" is ServiceAccount "+a.ServiceAccount+"'s, not "+victimSA+"'s", "ServiceAccount "+victimSA+" has UID "+string(victim.UID)+", not "+string(guestSA.UID))
	_, err = drv.CoreV1().Secrets(ns).Create(ctx, token(a.ServiceAccount, string(uuid.NewUUID())), metav1.CreateOptions{})
	refusedFor("a token Secret for the guest "+a.ServiceAccount+" with a UID it does not have", err, "ServiceAccount "+a.ServiceAccount+" has UID "+string(guestSA.UID))

	// The driver's own flow right after its account was deleted (rotate,
	// revoke): the policy's parameters may still hold the old UID, and it
	// asks again until they hold the new account.
	old := guestSA.UID
	for range 3 {
		for _, err := range []error{kube.CoreV1().Secrets(ns).Delete(ctx, a.TokenSecretName(), metav1.DeleteOptions{}),
			kube.CoreV1().ServiceAccounts(ns).Delete(ctx, a.ServiceAccount, metav1.DeleteOptions{})} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		h, a := issueGuestAsDriver(t, ctx, kc, guestCluster, ns)
		sec, err := h.TokenSecret(ctx, a)
		if err != nil {
			t.Fatalf("the guest token Secret the driver made again: %v", err)
		}
		if uid := sec.Annotations[corev1.ServiceAccountUIDKey]; uid == "" || uid == string(old) || len(sec.Data[corev1.ServiceAccountTokenKey]) == 0 {
			t.Fatalf("re-made guest token Secret: UID %q (the old one %s), token %d bytes", uid, old, len(sec.Data[corev1.ServiceAccountTokenKey]))
		}
		old = types.UID(sec.Annotations[corev1.ServiceAccountUIDKey])
	}
}

// raceOnce: the driver creates the token Secret s for a ServiceAccount
// that does not exist, and an admin creates that account right after. The
// Secret must never hold a token and must go (the token controller
// deletes a token Secret whose account of that name has another UID).
func raceOnce(t *testing.T, ctx context.Context, drv kubernetes.Interface, ns string, s *corev1.Secret) {
	t.Helper()
	sa := s.Annotations[corev1.ServiceAccountNameKey]
	made, err := drv.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsForbidden(err) {
		t.Logf("refused at once: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ServiceAccounts(ns).Delete(context.WithoutCancel(ctx), sa, metav1.DeleteOptions{})
	})
	w, err := kube.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", s.Name).String(), ResourceVersion: made.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of Secret %s closed", s.Name)
			}
			got, _ := ev.Object.(*corev1.Secret)
			if got != nil && len(got.Data[corev1.ServiceAccountTokenKey]) > 0 {
				t.Fatalf("Secret %s, made by the driver before ServiceAccount %s existed, holds its token", s.Name, sa)
			}
			if ev.Type == watch.Deleted {
				t.Logf("Secret %s deleted by the token controller, never filled", s.Name)
				return
			}
		case <-deadline:
			t.Fatalf("Secret %s for %s (another UID) not deleted within a minute", s.Name, sa)
		}
	}
}
