package webhook

import (
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration is the MutatingWebhookConfiguration that sends VM creates
// and updates to the server at url (trusted through caBundle), as Harvester
// v1.8 registers its mutator for virtualmachines: same names, rule and
// sideEffects. Harvester's failurePolicy is Ignore; the simulator's is
// Fail, so that a VM never lands unmutated unnoticed (its server lives in
// the simulator process and is up whenever kube-apiserver is).
func Configuration(url string, caBundle []byte, labels map[string]string) *admissionregv1.MutatingWebhookConfiguration {
	fail := admissionregv1.Fail
	none := admissionregv1.SideEffectClassNone
	scope := admissionregv1.NamespacedScope
	return &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName, Labels: labels},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: admissionregv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
				Rule: admissionregv1.Rule{
					APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"v1"},
					Resources: []string{"virtualmachines"}, Scope: &scope,
				},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
