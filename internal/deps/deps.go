package deps

import (
	_ "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	_ "github.com/rancher/machine/libmachine/drivers/plugin"
	_ "github.com/rancher/wrangler/v3/pkg/apply"
	_ "github.com/urfave/cli/v2"
	_ "gopkg.in/yaml.v3"
	_ "k8s.io/client-go/kubernetes"
	_ "kubevirt.io/api/core/v1"
	_ "kubevirt.io/client-go/kubevirt"
)
