package precheck

import (
	"strings"
	"testing"

	authv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/internal/driverrights"
)

func rule(verbs, groups, resources, names []string) authv1.ResourceRule {
	return authv1.ResourceRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
}

func list(s ...string) []string { return s }

func TestJudge(t *testing.T) {
	getVM := driverrights.Permission{Verb: "get", Group: "kubevirt.io", Resource: "virtualmachines"}
	deleteVM := driverrights.Permission{Verb: "delete", Group: "kubevirt.io", Resource: "virtualmachines"}
	crb := driverrights.Permission{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings", ClusterScoped: true}
	perms := []driverrights.Permission{getVM, deleteVM, crb}
	grants := []authv1.ResourceRule{rule(list("get"), list("kubevirt.io"), list("virtualmachines"), nil), rule(list("*"), list("*"), list("clusterrolebindings"), nil)}
	cases := []struct {
		name   string
		review *authv1.SubjectRulesReviewStatus
		want   []permissionVerdict
	}{
		{"complete rules decide; cluster-scoped is asked again", &authv1.SubjectRulesReviewStatus{ResourceRules: grants}, []permissionVerdict{allowed, denied, askAgain}},
		{"incomplete: what is not granted is asked again", &authv1.SubjectRulesReviewStatus{ResourceRules: grants, Incomplete: true}, []permissionVerdict{allowed, askAgain, askAgain}},
		{"no review: everything is asked", nil, []permissionVerdict{askAgain, askAgain, askAgain}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judge(c.review, perms)
			for i := range perms {
				if got[i] != c.want[i] {
					t.Errorf("%s: %d, want %d", perms[i], got[i], c.want[i])
				}
			}
		})
	}
}

// TestCheckPermissionsAsksOnce: complete rules answer every permission
// with the one review; incomplete rules fall back to an access review for
// each permission the rules do not grant, and only for those.
func TestCheckPermissionsAsksOnce(t *testing.T) {
	all := rule(list("*"), list("*"), list("*"), nil)
	noSecrets := []authv1.ResourceRule{
		rule(list("*"), list("kubevirt.io", "harvesterhci.io", "k8s.cni.cncf.io"), list("*"), nil),
		rule(list("*"), list(""), list("persistentvolumeclaims"), nil),
	}
	cases := []struct {
		name        string
		rules       []authv1.ResourceRule
		incomplete  bool
		accessAllow bool
		wantReviews int
		wantDenied  []string
	}{
		{"admin", []authv1.ResourceRule{all}, false, false, 0, nil},
		{"no secrets, complete", noSecrets, false, true, 0, list("get secrets", "list secrets", "watch secrets", "create secrets", "patch secrets", "delete secrets")},
		{"no secrets, incomplete, access reviews allow", noSecrets, true, true, 6, nil},
		{"no secrets, incomplete, access reviews deny", noSecrets, true, false, 6, list("list secrets", "watch secrets")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api, f, m := newFake(t, nil, nil)
			rulesReviews, accessReviews := 0, 0
			f.Kube.PrependReactor("create", "selfsubjectrulesreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				rulesReviews++
				r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectRulesReview).DeepCopy()
				if r.Spec.Namespace != testNS {
					t.Errorf("rules review of namespace %q", r.Spec.Namespace)
				}
				r.Status = authv1.SubjectRulesReviewStatus{ResourceRules: c.rules, Incomplete: c.incomplete}
				return true, r, nil
			})
			f.Kube.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				accessReviews++
				r := a.(k8stesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
				r.Status.Allowed = c.accessAllow || r.Spec.ResourceAttributes.Verb != "list" && r.Spec.ResourceAttributes.Verb != "watch"
				return true, r, nil
			})
			got := Permissions(t.Context(), api, m)
			if rulesReviews != 1 || accessReviews != c.wantReviews {
				t.Errorf("%d rules reviews and %d access reviews, want 1 and %d", rulesReviews, accessReviews, c.wantReviews)
			}
			var msgs []string
			for _, e := range got {
				msgs = append(msgs, e.Error())
			}
			joined := strings.Join(msgs, "\n")
			if len(got) != len(c.wantDenied) {
				t.Fatalf("problems:\n%s\nwant %d", joined, len(c.wantDenied))
			}
			for _, w := range c.wantDenied {
				if !strings.Contains(joined, "the credential may not "+w+" in namespace "+testNS) {
					t.Errorf("no problem for %q in:\n%s", w, joined)
				}
			}
		})
	}
}
