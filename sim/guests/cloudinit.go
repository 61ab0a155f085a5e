// Stand-in for KubeVirt's cloud-init data source, KubeVirt v1.7.0: the
// user data a VM's cloudInitNoCloud or cloudInitConfigDrive volume gives
// the guest. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/cloud-init/cloud-init.go.

package guests

import (
	"encoding/base64"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// cloudInitFiles reads the files a VM's cloud-init writes: the user data of
// its cloudInitNoCloud or cloudInitConfigDrive volume, inline, base64 or
// from the Secret it references (secretRef; key userdata or userData).
func (c *controller) cloudInitFiles(vm *unstructured.Unstructured) ([]userdata.File, error) {
	volumes, _, _ := unstructured.NestedSlice(vm.Object, "spec", "template", "spec", "volumes")
	var files []userdata.File
	for _, v := range volumes {
		vol, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, kind := range []string{"cloudInitNoCloud", "cloudInitConfigDrive"} {
			src, ok := vol[kind].(map[string]any)
			if !ok {
				continue
			}
			data, err := c.userData(vm.GetNamespace(), src)
			if err != nil {
				return nil, err
			}
			f, err := userdata.WriteFiles(data)
			if err != nil {
				return nil, err
			}
			files = append(files, f...)
		}
	}
	return files, nil
}

func (c *controller) userData(ns string, src map[string]any) ([]byte, error) {
	if s, ok := src["userData"].(string); ok && s != "" {
		return []byte(s), nil
	}
	if s, ok := src["userDataBase64"].(string); ok && s != "" {
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("userDataBase64: %w", err)
		}
		return data, nil
	}
	ref, ok := src["secretRef"].(map[string]any) // KubeVirt's userDataSecretRef

	if !ok {
		return nil, nil
	}
	name, _ := ref["name"].(string)
	secret, err := c.secrets.Core().V1().Secrets().Lister().Secrets(ns).Get(name)
	if err != nil {
		return nil, fmt.Errorf("cloud-init Secret %s/%s: %w", ns, name, err)
	}
	for _, key := range []string{"userdata", "userData"} {
		if data, ok := secret.Data[key]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("cloud-init Secret %s/%s has no userdata key", ns, name)
}
