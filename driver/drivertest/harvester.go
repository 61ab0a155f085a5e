package drivertest

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	virtfake "kubevirt.io/client-go/kubevirt/fake"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/restapi/restapifake"
)

// Harvester is a fake Harvester: the fake clientsets behind an API, for
// a test to seed, watch (Actions) and make fail (reactors).
type Harvester struct {
	Kube *kubefake.Clientset
	Virt *virtfake.Clientset
	Dyn  *dynfake.FakeDynamicClient
}

// NewHarvester holds kube objects, KubeVirt objects and Harvester's own
// (Settings and the like, served by the dynamic client).
func NewHarvester(kubeObjs, virtObjs, dynObjs []runtime.Object) Harvester {
	return Harvester{
		Kube: kubefake.NewSimpleClientset(kubeObjs...),
		Virt: virtfake.NewSimpleClientset(virtObjs...),
		Dyn: dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{harvesterapi.GVRSetting: "SettingList", harvesterapi.GVRImage: "VirtualMachineImageList",
				harvesterapi.GVRKeyPair: "KeyPairList", harvesterapi.GVRNetwork: "NetworkAttachmentDefinitionList"}, dynObjs...),
	}
}

// API is the driver's API over the fakes, with a 5 s call deadline and
// rejected as the credential's message.
func (h Harvester) API(rejected *kubeapi.CredentialsRejectedError) *harvesterapi.API {
	return harvesterapi.FromClients(restapifake.Clients{Kube: h.Kube, Virt: h.Virt}, restapifake.Dynamic(h.Dyn), nil,
		harvesterapi.Options{CallTimeout: 5 * time.Second, Rejected: rejected})
}
