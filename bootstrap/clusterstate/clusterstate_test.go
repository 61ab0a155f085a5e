package clusterstate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestJWTExpiry(t *testing.T) {
	exp := time.Unix(1790000000, 0).UTC()
	cases := []struct {
		token  string
		isJWT  bool
		expiry *time.Time
	}{
		{jwt(`{"exp":1790000000,"sub":"system:serviceaccount:default:a"}`), true, &exp},
		{jwt(`{"sub":"system:serviceaccount:default:a"}`), true, nil},
		{"kubeconfig-u-abc:0123456789abcdef", false, nil},
		{"a.b", false, nil},
		{"a.!!!.c", false, nil},
		{jwt(`not json`), false, nil},
	}
	for _, c := range cases {
		got, isJWT := JWTExpiry(c.token)
		if isJWT != c.isJWT || (got == nil) != (c.expiry == nil) || (got != nil && !got.Equal(*c.expiry)) {
			t.Errorf("JWTExpiry(%q) = %v, %v; want %v, %v", c.token, got, isJWT, c.expiry, c.isJWT)
		}
	}
}

func TestCredentialOf(t *testing.T) {
	if k, exp := CredentialOf(&rest.Config{BearerToken: jwt(`{"exp":1790000000}`)}); k != CredJWT || exp == nil {
		t.Errorf("JWT: %s %v", k, exp)
	}
	if k, exp := CredentialOf(&rest.Config{BearerToken: "opaque"}); k != CredToken || exp != nil {
		t.Errorf("opaque token: %s %v", k, exp)
	}
	if k, _ := CredentialOf(&rest.Config{}); k != CredOther {
		t.Errorf("no credential: %s", k)
	}
}

func TestFetchRecordsListErrorsAndKeepsNoToken(t *testing.T) {
	tok := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "a-token", Namespace: "default", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "harvester-bootstrap", "harvester-bootstrap.harvesterhci.io/guest-cluster": "a"},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "a"}},
		Data: map[string][]byte{corev1.ServiceAccountTokenKey: []byte("secret-token-value")},
	}
	kube := fake.NewClientset(tok)
	kube.PrependReactor("list", "persistentvolumeclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden")
	})
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		GVRVM: "VirtualMachineList", GVRVMI: "VirtualMachineInstanceList", GVRLoadBalancer: "LoadBalancerList", GVRIPPool: "IPPoolList",
	})
	c := &Clients{Kube: kube, Dyn: dyn, Config: &rest.Config{Host: "https://127.0.0.1:1"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := c.FetchHarvester(ctx, Target{Cluster: "a", Namespace: "default"}, true)
	if h.Failed(KindPVC) == "" || h.Failed(KindVM) != "" {
		t.Errorf("errors = %v, want only the PVC listing", h.Errors)
	}
	if len(h.TokenSecrets) != 1 || !h.TokenSecrets[0].Filled || h.TokenSecrets[0].ServiceAccount != "a" {
		t.Fatalf("token secrets = %+v", h.TokenSecrets)
	}
	if a := h.TokenSecrets[0].Auth; a == nil || a.Err == "" || a.Kind != CredToken {
		t.Errorf("auth against an unreachable server = %+v, want an error", a)
	}
}

func TestFetchListsEachKindOnce(t *testing.T) {
	labelled := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "disk-0", Namespace: "default",
		Labels: map[string]string{harvester.LabelGuestCluster: harvester.LabelValue("a")}}}
	hostVolume := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1234", Namespace: "default"}}
	kube := fake.NewClientset(labelled, hostVolume)
	dyn := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		GVRVM: "VirtualMachineList", GVRVMI: "VirtualMachineInstanceList", GVRLoadBalancer: "LoadBalancerList", GVRIPPool: "IPPoolList",
	})
	c := &Clients{Kube: kube, Dyn: dyn, Config: &rest.Config{}}
	h := c.FetchHarvester(context.Background(), Target{Cluster: "a", Namespace: "default"}, false)
	if len(h.Errors) != 0 {
		t.Fatal(h.Errors)
	}
	if len(h.PVCs) != 1 || h.PVCs[0].Name != "disk-0" || len(h.Claims) != 2 {
		t.Errorf("PVCs = %v, Claims = %v; want the labelled one of both", h.PVCs, h.Claims)
	}
	count := map[string]int{}
	for _, a := range append(kube.Actions(), dyn.Actions()...) {
		switch {
		case a.GetVerb() == "get" && a.GetResource().Resource == "rolebindings":
			count["rolebindings (get)"]++
		case a.GetVerb() != "list":
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		default:
			count[a.GetResource().Resource]++
		}
	}
	want := map[string]int{"virtualmachines": 1, "virtualmachineinstances": 1, "loadbalancers": 1, "ippools": 1,
		"persistentvolumeclaims": 1, "secrets": 2, "serviceaccounts": 2, "rolebindings": 1, "rolebindings (get)": 2, "clusterrolebindings": 1, "storageclasses": 1, "configmaps": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("requests = %v, want %v (12 lists: the cloud-init and the token Secrets by their own labels, the cluster's and every guest's ServiceAccounts; a get of the grant's two RoleBindings)", count, want)
	}
}
