package bootstrap_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLongServiceAccountCreatesNothing: a 250-character --service-account
// (valid itself, but its token Secret <sa>-token would not be) fails before
// any object exists on Harvester; it used to leave three objects behind.
func TestLongServiceAccountCreatesNothing(t *testing.T) {
	ctx := ctxT(t)
	long := strings.Repeat("s", 250)
	r := runBin(t, "kubeconfig", "--cluster-name", "e2e-long", "--namespace", "default", "--service-account", long)
	if r.code == 0 {
		t.Fatalf("kubeconfig with a 250-character service account succeeded")
	}
	if !strings.Contains(r.stderr, `--service-account "`+long+`": at most 247 characters`) {
		t.Errorf("stderr does not name the flag and the limit:\n%s", r.stderr)
	}
	sel := metav1.ListOptions{LabelSelector: managedSelector + "e2e-long"}
	sas, err := admin.CoreV1().ServiceAccounts("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := admin.RbacV1().RoleBindings("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	crbs, err := admin.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := admin.CoreV1().Secrets("default").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sas.Items) + len(rbs.Items) + len(crbs.Items) + len(secrets.Items); n != 0 {
		t.Errorf("%d objects left for cluster e2e-long", n)
	}
}
