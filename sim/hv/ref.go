package hv

import (
	"fmt"
	"strings"
)

// ParseRef splits a reference such as an image ID: ref.Parse
// (pkg/ref/ref.go), "<namespace>/<name>" at the first slash, or a bare
// name, which is in defaultNS. A reference that leaves the namespace or
// the name empty names nothing Harvester could get, and is an error.
func ParseRef(ref, defaultNS string) (namespace, name string, err error) {
	namespace, name, found := strings.Cut(ref, "/")
	if !found {
		namespace, name = defaultNS, ref
	}
	if namespace == "" || name == "" {
		return "", "", fmt.Errorf("%q is not <namespace>/<name>", ref)
	}
	return namespace, name, nil
}
