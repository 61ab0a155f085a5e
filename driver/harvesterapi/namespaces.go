package harvesterapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

func (a *API) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	return do(ctx, a, "get namespace "+name, func(c context.Context) (*corev1.Namespace, error) {
		return a.kube.Namespaces().Get(c, name, metav1.GetOptions{})
	})
}

// ListResourceQuotas lists the namespace's ResourceQuotas (what a new VM
// must fit into).
func (a *API) ListResourceQuotas(ctx context.Context, ns string) (*corev1.ResourceQuotaList, error) {
	return do(ctx, a, "list resource quotas in "+ns, func(c context.Context) (*corev1.ResourceQuotaList, error) {
		return a.kube.ResourceQuotas(ns).List(c, metav1.ListOptions{})
	})
}

// ListEvents lists the events about objects called involved.
func (a *API) ListEvents(ctx context.Context, ns, involved string) ([]corev1.Event, error) {
	return a.listEvents(ctx, ns, "involvedObject.name", involved)
}

// ListEventsOfUID lists the events about the object of that UID (a
// VMI's launcher Pod, whose name the driver does not choose).
func (a *API) ListEventsOfUID(ctx context.Context, ns string, uid types.UID) ([]corev1.Event, error) {
	return a.listEvents(ctx, ns, "involvedObject.uid", string(uid))
}

func (a *API) listEvents(ctx context.Context, ns, field, value string) ([]corev1.Event, error) {
	list, err := do(ctx, a, "list events of "+ref(ns, value), func(c context.Context) (*corev1.EventList, error) {
		return a.kube.Events(ns).List(c, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector(field, value).String(),
		})
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}
