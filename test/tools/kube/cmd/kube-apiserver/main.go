// Command kube-apiserver is the real Kubernetes API server, built from the
// k8s.io/kubernetes module so the simulated Harvester needs no download.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
