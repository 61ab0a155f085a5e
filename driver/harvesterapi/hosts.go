package harvesterapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListNodes lists the hosts (their allocatable vGPU profiles).
func (a *API) ListNodes(ctx context.Context) (*corev1.NodeList, error) {
	return do(ctx, a, "list hosts", func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{})
	})
}

// GetHost reads one host by name with a list of one (the credential may
// list hosts, not get them); nil when there is none of that name.
func (a *API) GetHost(ctx context.Context, name string) (*corev1.Node, error) {
	list, err := do(ctx, a, "read host "+name, func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].Name == name {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// HostArch is the hosts' architecture: the first host's
// kubernetes.io/arch label (a Harvester cluster's hosts share one), read
// with a list of one.
func (a *API) HostArch(ctx context.Context) (string, error) {
	list, err := do(ctx, a, "list hosts", func(c context.Context) (*corev1.NodeList, error) {
		return a.kube.Nodes().List(c, metav1.ListOptions{Limit: 1})
	})
	if err != nil || len(list.Items) == 0 {
		return "", err
	}
	return list.Items[0].Labels[corev1.LabelArchStable], nil
}
