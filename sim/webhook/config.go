package webhook

import (
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration is the MutatingWebhookConfiguration that sends VM creates
// and updates to the server at url (trusted through caBundle), as Harvester
// v1.8 registers its mutator for virtualmachines: same names, rule and
// sideEffects. Harvester's failurePolicy is Ignore; the simulator's is
// Fail, so that a VM never lands unmutated unnoticed (its server lives in
// the simulator process and is up whenever kube-apiserver is).
func Configuration(url string, caBundle []byte, labels map[string]string) *admissionv1.MutatingWebhookConfiguration {
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	scope := admissionv1.NamespacedScope
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName, Labels: labels},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:         WebhookName,
			ClientConfig: admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{
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
