package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	reviewv1 "k8s.io/api/admission/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// KubeVirt v1.7's virt-api names for its migration create validator
// (pkg/virt-operator/resource/generate/components/validatingwebhooks.go).
const (
	// ValidatorConfigurationName is virt-api's ValidatingWebhookConfiguration.
	ValidatorConfigurationName = "virt-api-validator"
	// MigrationWebhookName is its webhook for migration creates.
	MigrationWebhookName = "migration-create-validator.kubevirt.io"
	// MigrationValidatePath is where virt-api answers it.
	MigrationValidatePath = "/migration-validate-create"
)

var (
	gvrVMI  = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstances")
	gvrVMIM = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstancemigrations")
)

// migrationAdmitter is KubeVirt's MigrationCreateAdmitter.
type migrationAdmitter struct {
	dyn dynamic.Interface
	log *slog.Logger
}

// ValidatorConfiguration sends migration creates to the server at url,
// as virt-api registers its validator (failurePolicy Fail).
func ValidatorConfiguration(url string, caBundle []byte, labels map[string]string) *admissionv1.ValidatingWebhookConfiguration {
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	scope := admissionv1.NamespacedScope
	return &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatorConfigurationName, Labels: labels},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:         MigrationWebhookName,
			ClientConfig: admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"v1"},
					Resources: []string{"virtualmachineinstancemigrations"}, Scope: &scope},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

func (a *migrationAdmitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveReview(w, r, a.admit)
}

// admit follows MigrationCreateAdmitter.Admit: spec.vmiName required; the
// VMI must exist, not be final, not be LiveMigratable False, and have no
// migration in flight.
func (a *migrationAdmitter) admit(ctx context.Context, req *reviewv1.AdmissionRequest) *reviewv1.AdmissionResponse {
	var m kubevirtv1.VirtualMachineInstanceMigration
	if err := json.Unmarshal(req.Object.Raw, &m); err != nil {
		return kubevirtError(err.Error())
	}
	if m.Spec.VMIName == "" {
		return &reviewv1.AdmissionResponse{Result: &metav1.Status{Message: "vmiName is missing", Reason: metav1.StatusReasonInvalid,
			Code: http.StatusUnprocessableEntity, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
				Type: metav1.CauseTypeFieldValueRequired, Message: "vmiName is missing", Field: "spec.vmiName"}}}}}
	}
	ns := req.Namespace
	u, err := a.dyn.Resource(gvrVMI).Namespace(ns).Get(ctx, m.Spec.VMIName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return kubevirtError(fmt.Sprintf("the VMI \"%s/%s\" does not exist", ns, m.Spec.VMIName))
	} else if err != nil {
		return kubevirtError(err.Error())
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err != nil {
		return kubevirtError(err.Error())
	}
	if vmi.IsFinal() {
		return kubevirtError("Cannot migrate VMI in finalized state.")
	}
	if msg := MigrationRefusal(&vmi); msg != "" {
		return kubevirtError(msg)
	}
	list, err := a.dyn.Resource(gvrVMIM).Namespace(ns).List(ctx, metav1.ListOptions{
		LabelSelector: kubevirtv1.MigrationSelectorLabel + " in (" + m.Spec.VMIName + ")"})
	if err != nil {
		return kubevirtError(err.Error())
	}
	for _, o := range list.Items {
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		if phase == string(kubevirtv1.MigrationSucceeded) || phase == string(kubevirtv1.MigrationFailed) {
			continue
		}
		vmiName, _, _ := unstructured.NestedString(o.Object, "spec", "vmiName")
		return kubevirtError(fmt.Sprintf("in-flight migration detected. Active migration job (%s) is currently already in progress for VMI %s.", o.GetUID(), vmiName))
	}
	return &reviewv1.AdmissionResponse{Allowed: true}
}

// MigrationRefusal is KubeVirt's isMigratable for a local migration:
// "Cannot migrate VMI, Reason: R, Message: M" for a LiveMigratable False
// condition, else "".
func MigrationRefusal(vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, c := range vmi.Status.Conditions {
		if c.Type == kubevirtv1.VirtualMachineInstanceIsMigratable && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message)
		}
	}
	return ""
}

// kubevirtError is webhookutils.ToAdmissionResponseError: code 400, the message.
func kubevirtError(msg string) *reviewv1.AdmissionResponse {
	return &reviewv1.AdmissionResponse{Result: &metav1.Status{Message: msg, Code: http.StatusBadRequest}}
}
