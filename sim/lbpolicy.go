// Stand-in for the IP pool validator of Harvester's load balancer webhook,
// load-balancer-harvester v1.8.1: an IPPool with allocated addresses
// cannot be deleted. It follows
// https://github.com/harvester/load-balancer-harvester/blob/v1.8.1/pkg/webhook/ippool/validator.go.

package sim

import (
	"context"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// poolInUsePolicy names the admission policy that plays the validator's
// refusal to delete an IPPool with allocations.
const poolInUsePolicy = "harvester-sim-ippool-in-use"

// poolInUseRefusal is the validator's Delete error, word for word. The
// webhook answers it as an InternalError (500) that kube-apiserver
// prefixes with `admission webhook
// "validator.harvester-system.harvester-load-balancer-webhook" denied the
// request: `; the policy's refusal is kube-apiserver's Invalid (422) with
// the policy's own prefix.
const poolInUseRefusal = "can't delete pool before releasing all the allocated IP"

// buildPoolInUsePolicy is a ValidatingAdmissionPolicy (and binding) that
// makes kube-apiserver refuse deletes of IPPools that have allocated
// addresses (len(status.allocated) != 0), as the validator does.
func buildPoolInUsePolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionv1.Fail
	labels := map[string]string{simLabel: "true"}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: poolInUsePolicy, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{lbapi.Group}, APIVersions: []string{"*"}, Resources: []string{"ippools"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(oldObject.status) || !has(oldObject.status.allocated) || size(oldObject.status.allocated) == 0",
				Message:    poolInUseRefusal,
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: poolInUsePolicy, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: poolInUsePolicy, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}

func installPoolInUsePolicy(ctx context.Context, kube kubernetes.Interface) error {
	policy, binding := buildPoolInUsePolicy()
	api := kube.AdmissionregistrationV1()
	_, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	if err := createIfMissing(err, "ValidatingAdmissionPolicy "+policy.Name); err != nil {
		return err
	}
	_, err = api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	return createIfMissing(err, "ValidatingAdmissionPolicyBinding "+binding.Name)
}
