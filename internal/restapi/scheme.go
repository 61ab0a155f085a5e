package restapi

import (
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// scheme holds only the API groups this project's tools call: registering
// these few instead of client-go's scheme of every Kubernetes API group
// keeps the others (and their generated clients) out of the binaries.
var scheme = runtime.NewScheme()

var (
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		rbacv1.AddToScheme,
		authzv1.AddToScheme,
		authnv1.AddToScheme,
		storagev1.AddToScheme,
		kubevirtv1.AddToScheme,
	} {
		utilruntime.Must(add(scheme))
	}
	// The unversioned options (GetOptions, ListOptions, ...) that
	// parameterCodec encodes into query parameters.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
}
