// Command virt-controller is KubeVirt v1.7.0's virt-controller, built from
// the served module for harvester-sim: this main only hands over to
// KubeVirt's own entry point, which parses the flags, takes the install
// namespace from the service-account directory and runs every controller.
package main

import "kubevirt.io/kubevirt/pkg/virt-controller/watch"

func main() {
	watch.Execute()
}
