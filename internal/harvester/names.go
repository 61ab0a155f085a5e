package harvester

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// SplitNamespacedName splits a reference to a namespaced Harvester object
// (image, key pair, network): "<namespace>/<name>", or, when defaultNS is
// not empty, "<name>" in defaultNS. The namespace must be a DNS-1123 label,
// the name a DNS-1123 subdomain.
func SplitNamespacedName(v, defaultNS string) (namespace, name string, err error) {
	ns, name, found := strings.Cut(v, "/")
	if !found {
		if defaultNS == "" {
			return "", "", fmt.Errorf("%q is not <namespace>/<name> (for example default/vlan1)", v)
		}
		ns, name = defaultNS, v
	}
	var problems []string
	if len(validation.IsDNS1123Label(ns)) > 0 {
		problems = append(problems, fmt.Sprintf("namespace %q is not a DNS-1123 label", ns))
	}
	if strings.Contains(name, "/") || len(validation.IsDNS1123Subdomain(name)) > 0 {
		problems = append(problems, fmt.Sprintf("name %q is not a DNS-1123 subdomain", name))
	}
	if len(problems) > 0 {
		form := "<namespace>/<name>"
		if defaultNS != "" {
			form += " or <name>"
		}
		return "", "", fmt.Errorf("%q is not %s of lowercase letters, digits and dashes (%s)", v, form, strings.Join(problems, "; "))
	}
	return ns, name, nil
}
