package kubevirt

import (
	"context"
	_ "embed"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

//go:embed kubevirt-cr.yaml
var kubeVirtCRYAML []byte

// KubeVirtCR is Harvester v1.8.1's KubeVirt CR (kubevirt-cr.yaml) in namespace.
func KubeVirtCR(namespace string) (*kubevirtv1.KubeVirt, error) {
	var kv kubevirtv1.KubeVirt
	if err := yaml.UnmarshalStrict(kubeVirtCRYAML, &kv); err != nil {
		return nil, fmt.Errorf("kubevirt: decode the KubeVirt CR: %w", err)
	}
	kv.Namespace = namespace
	return &kv, nil
}

// deployedStatus is the status virt-operator writes once every component
// is ready. virt-api and virt-controller need two fields of it: without
// phase Deployed they ignore the CR's configuration
// (GetConfigFromKubeVirtCR skips it), and without defaultArchitecture
// virt-api's mutator gives VMIs no architecture and its validator refuses
// every one ("unsupported architecture: ").
func deployedStatus() kubevirtv1.KubeVirtStatus {
	now := metav1.Now()
	return kubevirtv1.KubeVirtStatus{
		Phase:                   kubevirtv1.KubeVirtPhaseDeployed,
		DefaultArchitecture:     "amd64",
		OperatorVersion:         Version,
		TargetKubeVirtVersion:   Version,
		ObservedKubeVirtVersion: Version,
		Conditions: []kubevirtv1.KubeVirtCondition{
			{Type: kubevirtv1.KubeVirtConditionAvailable, Status: "True", Reason: "AllComponentsReady", Message: "All components are ready.", LastProbeTime: now, LastTransitionTime: now},
			{Type: kubevirtv1.KubeVirtConditionProgressing, Status: "False", Reason: "AllComponentsReady", Message: "All components are ready.", LastProbeTime: now, LastTransitionTime: now},
			{Type: kubevirtv1.KubeVirtConditionDegraded, Status: "False", Reason: "AllComponentsReady", Message: "All components are ready.", LastProbeTime: now, LastTransitionTime: now},
		},
	}
}

// CreateKubeVirtCR creates Harvester's KubeVirt CR (its CRD established)
// and writes the status virt-operator would.
func (c *ControlPlane) CreateKubeVirtCR(ctx context.Context) error {
	kv, err := KubeVirtCR(c.o.Namespace)
	if err != nil {
		return err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kv)
	if err != nil {
		return fmt.Errorf("kubevirt: encode the KubeVirt CR: %w", err)
	}
	ri := c.dyn.Resource(kubevirtv1.GroupVersion.WithResource("kubevirts")).Namespace(c.o.Namespace)
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	created, err := ri.Apply(ctx, kv.Name, u, metav1.ApplyOptions{FieldManager: "harvester", Force: true})
	if err != nil {
		return fmt.Errorf("kubevirt: create the KubeVirt CR: %w", err)
	}
	st := deployedStatus()
	generation := created.GetGeneration()
	st.ObservedGeneration = &generation
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return fmt.Errorf("kubevirt: encode the KubeVirt CR's status: %w", err)
	}
	created.Object["status"] = status
	if _, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kubevirt: write the KubeVirt CR's status: %w", err)
	}
	return nil
}
