package cloudinit

import "gopkg.in/yaml.v3"

// GuestNames are the names a user's cloud-config gives the guest: its
// top-level `hostname` and `fqdn` ("" when not set), a later document's
// value winning as Merge merges them. Values inside jinja templates are
// returned as written; documents that are not cloud-config (scripts, MIME
// parts passed on) are not read.
type GuestNames struct {
	Hostname, FQDN string
}

// Names reads the hostname and fqdn the part sets.
func (p Part) Names() GuestNames {
	var n GuestNames
	for _, d := range p.docs {
		if d.node == nil {
			continue
		}
		if v := scalarValue(d.node, "hostname"); v != "" {
			n.Hostname = v
		}
		if v := scalarValue(d.node, "fqdn"); v != "" {
			n.FQDN = v
		}
	}
	return n
}

// scalarValue is the value of a mapping's key when it is a non-null scalar.
func scalarValue(m *yaml.Node, key string) string {
	i := indexOfKey(m, key)
	if i < 0 {
		return ""
	}
	v := m.Content[i+1]
	if v.Kind != yaml.ScalarNode || isNullNode(v) {
		return ""
	}
	return v.Value
}
