// Command kube-controller-manager is the real Kubernetes controller manager,
// built from the k8s.io/kubernetes module for the simulated Harvester.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
