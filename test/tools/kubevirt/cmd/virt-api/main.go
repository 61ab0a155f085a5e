// Command virt-api is KubeVirt v1.7.0's virt-api, built from the served
// module for harvester-sim: the admission webhooks and the
// subresources.kubevirt.io API. This main wires KubeVirt's exported
// pieces as its own command does: logging, the application, its flags.
package main

import (
	kvlog "kubevirt.io/client-go/log"

	"kubevirt.io/kubevirt/pkg/service"
	virtapi "kubevirt.io/kubevirt/pkg/virt-api"
)

func main() {
	kvlog.InitializeLogging("virt-api")
	app := virtapi.NewVirtApi()
	service.Setup(app)
	app.Execute()
}
