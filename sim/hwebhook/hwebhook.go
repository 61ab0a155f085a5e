// Package hwebhook runs Harvester's own admission webhook for the
// simulator: bin/harvester-webhook (Harvester v1.8.1's pkg/webhook/server,
// test/tools/harvester) with what Harvester's chart gives it: ServiceAccount
// harvester bound to cluster-admin, a Pod's ServiceAccount files, and
// Service harvester-webhook port 443. The webhook registers its own
// harvester-validator and harvester-mutator configurations by that Service.
package hwebhook

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/podenv"
	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// Harvester v1.8.1's names (deploy/charts/harvester/templates,
// pkg/webhook/server/server.go, pkg/webhook/types.go).
const (
	// Binary is the webhook's executable in the bin dir.
	Binary = "harvester-webhook"
	// ServiceAccount is the chart's harvester ServiceAccount; its
	// ClusterRoleBinding of the same name gives it cluster-admin.
	ServiceAccount = "harvester"
	// ServiceName is the Service both configurations send to.
	ServiceName = "harvester-webhook"
	// ServicePort is that Service's port, a constant of Harvester's server.
	ServicePort = 443
	// ValidatorName and MutatorName are the configurations it registers.
	ValidatorName = "harvester-validator"
	MutatorName   = "harvester-mutator"
)

// tokenLifetime: on Harvester the kubelet refreshes a Pod's projected
// token; nothing does here, so it outlasts any simulator run.
const tokenLifetime = 7 * 24 * time.Hour

// Options configure the webhook's run.
type Options struct {
	// Dir holds its ServiceAccount files and kubeconfig.
	Dir string
	// Namespace is Harvester's (harvester-system).
	Namespace string
	// APIServer is kube-apiserver's URL; CACert the cluster CA.
	APIServer string
	CACert    []byte
	Kube      kubernetes.Interface
	// Labels mark what the simulator creates.
	Labels map[string]string
}

// ServiceAccountDir is the directory bound at podenv.ServiceAccountDir in
// the webhook's mount namespace.
func (o Options) ServiceAccountDir() string { return filepath.Join(o.Dir, "serviceaccount") }

func (o Options) kubeconfigPath() string { return filepath.Join(o.Dir, "harvester-webhook.kubeconfig") }

// Args are the webhook's flags: Harvester's Deployment environment
// (HARVESTER_WEBHOOK_SERVER_HTTPS_PORT, HARVESTER_CONTROLLER_USER_NAME,
// NAMESPACE), port the free loopback port Service harvester-webhook
// forwards to.
func (o Options) Args(port int) []string {
	return []string{"--kubeconfig", o.kubeconfigPath(), "--namespace", o.Namespace,
		"--https-port", strconv.Itoa(port),
		"--controller-user", "system:serviceaccount:" + o.Namespace + ":" + ServiceAccount}
}

// Objects are the chart's ServiceAccount and ClusterRoleBinding and the
// Service, of type ExternalName to serviceIP: kube-apiserver resolves it
// to https://serviceIP:443 and still verifies the certificate against the
// Service's DNS name, which the webhook's own certificate names.
func Objects(namespace, serviceIP string, labels map[string]string) (*corev1.ServiceAccount, *rbacv1.ClusterRoleBinding, *corev1.Service) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: namespace, Labels: labels}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: namespace}},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: namespace, Labels: labels},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: serviceIP,
			Ports: []corev1.ServicePort{{Name: "https", Port: ServicePort, Protocol: corev1.ProtocolTCP}}},
	}
	return sa, crb, svc
}

// Prepare creates the ServiceAccount, its binding and the Service (to
// serviceIP), and writes the Pod's ServiceAccount files and a kubeconfig
// that names them (Harvester's validators read the token and CA files).
func Prepare(ctx context.Context, o Options, serviceIP string) error {
	_, _, svc := Objects(o.Namespace, serviceIP, o.Labels)
	err := Account(ctx, o.Kube, o.Namespace, o.Labels)
	if err == nil {
		_, err = o.Kube.CoreV1().Services(o.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("harvester-webhook: objects: %w", err)
	}
	if err := PodFiles(ctx, o.Kube, o.Namespace, o.ServiceAccountDir(), o.kubeconfigPath(), o.APIServer, o.CACert); err != nil {
		return fmt.Errorf("harvester-webhook: %w", err)
	}
	return nil
}

// Account creates the chart's ServiceAccount harvester and its
// ClusterRoleBinding to cluster-admin, which Harvester's webhook and API
// server both run as; either may create them first.
func Account(ctx context.Context, kube kubernetes.Interface, namespace string, labels map[string]string) error {
	sa, crb, _ := Objects(namespace, "", labels)
	_, err := kube.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("ServiceAccount %s/%s and its binding: %w", namespace, ServiceAccount, err)
	}
	return nil
}

// PodFiles writes what a Pod of ServiceAccount harvester finds (a token,
// the CA, the namespace) into saDir, and at kubeconfigPath a kubeconfig
// reaching apiServer with those files as the Pod sees them.
func PodFiles(ctx context.Context, kube kubernetes.Interface, namespace, saDir, kubeconfigPath, apiServer string, ca []byte) error {
	seconds := int64(tokenLifetime / time.Second)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, ServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", namespace, ServiceAccount, err)
	}
	if err := podenv.Write(saDir, namespace, []byte(tr.Status.Token), ca); err != nil {
		return err
	}
	return statefile.WriteKubeconfig(kubeconfigPath, kubeconfig(apiServer))
}

// kubeconfig reaches server with the Pod's token and CA files.
func kubeconfig(server string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["harvester"] = &clientcmdapi.Cluster{Server: server,
		CertificateAuthority: filepath.Join(podenv.ServiceAccountDir, podenv.CAFile)}
	cfg.AuthInfos[ServiceAccount] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(podenv.ServiceAccountDir, podenv.TokenFile)}
	cfg.Contexts["harvester"] = &clientcmdapi.Context{Cluster: "harvester", AuthInfo: ServiceAccount}
	cfg.CurrentContext = "harvester"
	return *cfg
}

// WaitRegistered waits until both of Harvester's configurations exist
// (the webhook applies them 15 s after its CA Secret first appears).
func WaitRegistered(ctx context.Context, kube kubernetes.Interface) error {
	val := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vk := kubeapi.KindOf[*admissionv1.ValidatingWebhookConfigurationList]("ValidatingWebhookConfiguration", &admissionv1.ValidatingWebhookConfiguration{}, val)
	if _, err := kubeapi.Wait(ctx, vk, "", ValidatorName, 0, func(c *admissionv1.ValidatingWebhookConfiguration) (bool, error) {
		return c != nil, nil
	}); err != nil {
		return fmt.Errorf("harvester-webhook: wait for %s: %w", ValidatorName, err)
	}
	mut := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	mk := kubeapi.KindOf[*admissionv1.MutatingWebhookConfigurationList]("MutatingWebhookConfiguration", &admissionv1.MutatingWebhookConfiguration{}, mut)
	if _, err := kubeapi.Wait(ctx, mk, "", MutatorName, 0, func(c *admissionv1.MutatingWebhookConfiguration) (bool, error) {
		return c != nil, nil
	}); err != nil {
		return fmt.Errorf("harvester-webhook: wait for %s: %w", MutatorName, err)
	}
	return nil
}
