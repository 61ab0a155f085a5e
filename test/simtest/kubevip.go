package simtest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// AnnotationKubeVIPHost is the annotation kube-vip writes on a Service it
// announces: the node that announces it.
const AnnotationKubeVIPHost = "kube-vip.io/vipHost"

// AnnounceAsKubeVIP plays kube-vip v1.2.3's two writes on a Service whose
// address the cloud provider wrote into kube-vip.io/loadbalancerIPs, for a
// test without the real kube-vip: it waits for that annotation, updates the
// annotation kube-vip.io/vipHost (node), then writes the ingress, in that
// order. It returns the address.
func AnnounceAsKubeVIP(ctx context.Context, guest kubernetes.Interface, namespace, name, node string) (string, error) {
	services := guest.CoreV1().Services(namespace)
	k := kubeapi.KindOf[*corev1.ServiceList]("Service", &corev1.Service{}, services)
	svc, err := kubeapi.Wait(ctx, k, namespace, name, 0, func(s *corev1.Service) (bool, error) {
		return s != nil && s.Annotations[addons.KubeVIPAddressAnnotation] != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("wait for the cloud provider's address on Service %s/%s: %w", namespace, name, err)
	}
	ip := svc.Annotations[addons.KubeVIPAddressAnnotation]
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := services.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Annotations[AnnotationKubeVIPHost] = node
		if cur, err = services.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		cur.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
		_, err = services.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("announce Service %s/%s as kube-vip: %w", namespace, name, err)
	}
	return ip, nil
}
