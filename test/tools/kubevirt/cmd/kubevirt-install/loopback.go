package main

import (
	"net"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
)

func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// byURL points a webhook's client at base plus the path of the Service
// reference virt-operator gives it, with caBundle as virt-operator sets it.
func byURL(cc admissionv1.WebhookClientConfig, base string, caBundle []byte) admissionv1.WebhookClientConfig {
	url := base
	if cc.Service != nil && cc.Service.Path != nil {
		url += *cc.Service.Path
	}
	return admissionv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
}

// validatingByURL is virt-api's validating webhook configurations by URL.
// virt-operator's own (virt-operator-validator) is left out: no
// virt-operator runs to serve it.
func validatingByURL(confs []*admissionv1.ValidatingWebhookConfiguration, base string, caBundle []byte) []*admissionv1.ValidatingWebhookConfiguration {
	var out []*admissionv1.ValidatingWebhookConfiguration
	for _, c := range confs {
		if c.Name == components.KubeVirtOperatorValidatingWebhookName {
			continue
		}
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig = byURL(c.Webhooks[i].ClientConfig, base, caBundle)
		}
		out = append(out, c)
	}
	return out
}

// mutatingByURL is virt-api's mutating webhook configurations by URL.
func mutatingByURL(confs []*admissionv1.MutatingWebhookConfiguration, base string, caBundle []byte) []*admissionv1.MutatingWebhookConfiguration {
	for _, c := range confs {
		for i := range c.Webhooks {
			c.Webhooks[i].ClientConfig = byURL(c.Webhooks[i].ClientConfig, base, caBundle)
		}
	}
	return confs
}

// apiServicesAt is the subresources APIServices with virt-api's port and
// the CA that signed its certificate (virt-operator sets the bundle; its
// Service gives the port).
func apiServicesAt(services []*apiregv1.APIService, port int, caBundle []byte) []*apiregv1.APIService {
	for _, s := range services {
		p := int32(port) //nolint:gosec // validated 1-65535
		s.Spec.Service.Port = &p
		s.Spec.CABundle = caBundle
	}
	return services
}

// virtAPIService is the Service the APIServices name: an ExternalName for
// virt-api's address, in place of virt-operator's ClusterIP Service (no
// cluster network routes to the host's loopback; the aggregation layer
// dials an ExternalName Service's name at the APIService's port).
func virtAPIService(o options) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: components.VirtApiServiceName, Namespace: o.namespace, Labels: map[string]string{"kubevirt.io": "virt-api"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: o.virtAPIIP},
	}
}
