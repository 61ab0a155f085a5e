// Command kubevirt-install writes what KubeVirt v1.7.0's virt-operator
// would install in a namespace, from KubeVirt's own install-strategy code
// (pkg/virt-operator/resource/generate): the CRDs, the RBAC, the
// certificates (populated as virt-operator populates them), the webhook
// configurations and the subresources APIServices. harvester-sim runs it at
// start and applies the files; it then starts virt-api and virt-controller
// with the certificate files under pki/.
//
// One change makes them work without a cluster network: virt-api is reached
// at an address on the host (--virt-api-ip, --virt-api-port) rather than
// through its Service. The webhooks call it by URL, the APIServices name
// an ExternalName Service for that address, and its serving certificate
// also names that IP.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
)

type options struct {
	namespace, out, virtAPIIP string
	virtAPIPort               int
}

func main() {
	var o options
	flag.StringVar(&o.namespace, "namespace", "harvester-system", "KubeVirt's install namespace")
	flag.StringVar(&o.out, "out", "", "directory to write the objects (YAML) and certificate files into")
	flag.StringVar(&o.virtAPIIP, "virt-api-ip", "127.0.0.1", "address virt-api listens on")
	flag.IntVar(&o.virtAPIPort, "virt-api-port", 0, "port virt-api listens on (1-65535)")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-install:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "kubevirt-install:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	var errs []error
	if o.out == "" {
		errs = append(errs, errors.New("--out: required: the directory to write into"))
	}
	if o.namespace == "" {
		errs = append(errs, errors.New("--namespace: empty: give KubeVirt's install namespace"))
	}
	if net.ParseIP(o.virtAPIIP) == nil {
		errs = append(errs, fmt.Errorf("--virt-api-ip: %q is not an IP address", o.virtAPIIP))
	}
	if o.virtAPIPort < 1 || o.virtAPIPort > 65535 {
		errs = append(errs, fmt.Errorf("--virt-api-port: %d is out of range: use 1 to 65535", o.virtAPIPort))
	}
	return errors.Join(errs...)
}
