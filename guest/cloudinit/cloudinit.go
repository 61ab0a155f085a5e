package cloudinit

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/internal/field"
)

const (
	// CloudConfigHeader is the first line of a cloud-config document.
	CloudConfigHeader = "#cloud-config"
	// JinjaHeader marks a cloud-config document rendered as a jinja template.
	JinjaHeader = "## template: jinja"
	// QemuGuestAgentPackage is the package that reports the guest's IP
	// addresses to KubeVirt.
	QemuGuestAgentPackage = "qemu-guest-agent"
	// InstallScriptDir is where rancher-machine writes the install script.
	InstallScriptDir = "/usr/local/custom_script/"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldUserData    = "user data"
	FieldCloudConfig = "cloud-config file"
)

// Input holds the parts of a VM's user data. Every field is optional.
type Input struct {
	// User is the login user the SSH keys and password are given to.
	// "root" configures root itself; any other name gets its own entry in
	// `users` (with passwordless sudo) next to the image's default user.
	User string
	// SSHAuthorizedKeys are public keys allowed to log in as User.
	SSHAuthorizedKeys []string
	// Password, if set, becomes User's password and enables SSH password
	// login. It only ever appears in the returned user data.
	Password string
	// InstallQemuGuestAgent adds the qemu-guest-agent package and enables it.
	InstallQemuGuestAgent bool
	// UserData is the user's own user data: cloud-config YAML (with or
	// without the #cloud-config line, possibly a jinja template) or a
	// non-YAML document such as a `#!` shell script.
	UserData []byte
	// CloudConfig is the content of the --harvester-cloud-config file.
	CloudConfig []byte
	// WriteFiles are files the node gets from the tool itself (the cloud
	// provider's credential and configuration). They come before the
	// write_files of UserData and CloudConfig.
	WriteFiles []WriteFile
}

// Build merges the parts of in into one user-data document (see the package
// documentation for the rules). It returns an error naming the part that
// cannot be used. It is ParseUserData, ParseCloudConfig and Merge in one.
func Build(in Input) ([]byte, error) {
	userData, err := ParseUserData(in.UserData)
	if err != nil {
		return nil, err
	}
	cloudConfig, err := ParseCloudConfig(in.CloudConfig)
	if err != nil {
		return nil, err
	}
	return Merge(in, userData, cloudConfig)
}

// Part is one of the user's inputs (the user data, or the cloud-config
// file), parsed once: Merge merges it as often as needed without parsing
// it again.
type Part struct {
	name string // FieldUserData or FieldCloudConfig, for problems
	docs []parsedDocument
}

// parsedDocument is one document of a Part: a cloud-config mapping to
// merge, or a part passed on as it is (neither: empty).
type parsedDocument struct {
	where string     // the MIME part, for problems ("" for the input itself)
	node  *yaml.Node // the cloud-config mapping (read only: Merge merges copies)
	jinja bool       // node is a jinja template
	raw   *rawPart
}

// ParseUserData parses the user's user data (Input.UserData).
func ParseUserData(data []byte) (Part, error) { return parsePart(FieldUserData, data) }

// ParseCloudConfig parses the cloud-config file (Input.CloudConfig).
func ParseCloudConfig(data []byte) (Part, error) { return parsePart(FieldCloudConfig, data) }

func parsePart(name string, data []byte) (Part, error) {
	docs, err := documents(data)
	if err != nil {
		return Part{}, field.Problem(name, "%v", err)
	}
	p := Part{name: name}
	for _, d := range docs {
		pd, err := parseDocument(d)
		if err != nil {
			return Part{}, partProblem(name, d.where, err)
		}
		p.docs = append(p.docs, pd)
	}
	return p, nil
}

// partProblem names the input, and the MIME part when there is one.
func partProblem(name, where string, err error) error {
	if where != "" {
		return field.Problem(name, "%s: %v", where, err)
	}
	return field.Problem(name, "%v", err)
}

// Merge merges the tool's parts of in (login, SSH keys, password, agent,
// write_files; in.UserData and in.CloudConfig are not read) and then the
// user's parsed parts, in order, into one user-data document. It is
// MergeDocument and Marshal in one.
func Merge(in Input, user ...Part) ([]byte, error) {
	doc, err := MergeDocument(in, user...)
	if err != nil {
		return nil, err
	}
	return doc.Marshal()
}

// parseDocument parses a document as the cloud-config mapping to merge, or
// keeps it as the part it is passed on as (neither: empty).
func parseDocument(d document) (parsedDocument, error) {
	pd := parsedDocument{where: d.where}
	merge, passType, err := handling(d)
	if err != nil {
		return pd, err
	}
	if !merge {
		if passType != "" {
			pd.raw = &rawPart{contentType: passType, data: d.data}
		}
		return pd, nil
	}
	kind, body, isJinja := classify(d.data)
	switch kind {
	case kindEmpty:
		return pd, nil
	case kindRaw: // declared text/cloud-config: it must parse as one
		body = d.data
	}
	node, err := parseMapping(body)
	if isJinja && (err != nil || !templateIntact(body, node)) {
		// A template whose jinja syntax is not YAML, or is YAML syntax
		// (`a: {{ x }}` reads as a flow mapping), is passed on whole.
		pd.raw = &rawPart{contentType: typeCloudConfig, data: d.data}
		return pd, nil
	}
	if err != nil {
		return pd, err
	}
	pd.node, pd.jinja = node, isJinja
	return pd, nil
}

// cloneNode is a deep copy of n (aliases are resolved by parseMapping, so
// n is a tree).
func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, child := range n.Content {
		c.Content[i] = cloneNode(child)
	}
	return &c
}

type partKind int

const (
	kindEmpty partKind = iota
	kindCloudConfig
	kindRaw
)

// classify tells cloud-config apart from other user-data formats. It returns
// the YAML body (header lines removed) and whether it is a jinja template.
func classify(data []byte) (partKind, []byte, bool) {
	text := strings.TrimLeft(string(data), "\ufeff")
	if strings.TrimSpace(text) == "" {
		return kindEmpty, nil, false
	}
	jinja := false
	if first, rest, _ := strings.Cut(text, "\n"); strings.TrimSpace(first) == JinjaHeader {
		jinja = true
		text = rest
	}
	trimmed := strings.TrimLeft(text, " \t\r\n")
	switch {
	case strings.HasPrefix(trimmed, "#!"),
		strings.HasPrefix(trimmed, "#include"),
		strings.HasPrefix(trimmed, "#cloud-boothook"),
		strings.HasPrefix(trimmed, "#part-handler"),
		isMIME([]byte(trimmed)):
		return kindRaw, nil, false
	}
	return kindCloudConfig, []byte(text), jinja
}

func rawContentType(data []byte) string {
	t := strings.TrimLeft(string(data), " \t\r\n\ufeff")
	switch {
	case strings.HasPrefix(t, JinjaHeader):
		return "text/jinja2"
	case strings.HasPrefix(t, "#!"):
		return "text/x-shellscript"
	case strings.HasPrefix(t, "#include"):
		return "text/x-include-url"
	case strings.HasPrefix(t, "#cloud-boothook"):
		return "text/cloud-boothook"
	case strings.HasPrefix(t, "#part-handler"):
		return "text/part-handler"
	}
	return "text/plain"
}

// parseMapping parses a cloud-config body. An empty document yields nil.
func parseMapping(body []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not valid cloud-config YAML: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("cloud-config must be a YAML mapping (key: value), or a #! script")
	}
	root, err := resolveAliases(root)
	if err == nil {
		err = checkKeys(root)
	}
	if err != nil {
		return nil, fmt.Errorf("not usable cloud-config YAML: %w", err)
	}
	dropComments(root)
	return root, nil
}

// dropComments removes comments (including the #cloud-config line, which
// yaml.v3 keeps as a head comment) so they are not re-emitted mid-document.
func dropComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		dropComments(c)
	}
}

// maxResolvedNodes bounds the YAML nodes alias resolution may produce (a
// few aliases of aliases can otherwise expand exponentially).
const maxResolvedNodes = 1 << 16

// resolveAliases replaces every alias in n by a copy of the node it refers
// to and drops anchors: merged into other parts, an alias could otherwise
// end up without (or before) its anchor. A recursive alias, or an
// expansion beyond maxResolvedNodes, is an error.
func resolveAliases(n *yaml.Node) (*yaml.Node, error) {
	budget := maxResolvedNodes
	var resolve func(n *yaml.Node, active map[*yaml.Node]bool) (*yaml.Node, error)
	resolve = func(n *yaml.Node, active map[*yaml.Node]bool) (*yaml.Node, error) {
		if budget--; budget < 0 {
			return nil, fmt.Errorf("YAML aliases expand to more than %d nodes", maxResolvedNodes)
		}
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil || active[n.Alias] {
				return nil, fmt.Errorf("line %d: alias *%s refers to itself", n.Line, n.Value)
			}
			return resolve(n.Alias, active)
		}
		if active[n] {
			return nil, fmt.Errorf("line %d: a node contains itself through an alias", n.Line)
		}
		active[n] = true
		defer delete(active, n)
		c := *n
		c.Anchor = ""
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, child := range n.Content {
			r, err := resolve(child, active)
			if err != nil {
				return nil, err
			}
			c.Content[i] = r
		}
		return &c, nil
	}
	return resolve(n, map[*yaml.Node]bool{})
}

// jinjaDelimiters open jinja expressions, statements and comments.
var jinjaDelimiters = []string{"{{", "{%", "{#"}

// templateIntact reports whether every jinja delimiter of body sits inside
// a YAML scalar of node, so re-encoding the tree keeps the template. A
// delimiter YAML read as syntax, or one in a comment, makes it false.
func templateIntact(body []byte, node *yaml.Node) bool {
	if node == nil {
		return !containsAny(string(body), jinjaDelimiters)
	}
	var scalars strings.Builder
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			scalars.WriteString(n.Value)
			scalars.WriteByte(0)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(node)
	for _, d := range jinjaDelimiters {
		if strings.Count(string(body), d) != strings.Count(scalars.String(), d) {
			return false
		}
	}
	return true
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// checkKeys rejects mapping keys that are mappings or lists: cloud-init
// (Python) cannot use them, and they do not survive a round trip.
func checkKeys(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key must be a plain value, not a mapping or list", k.Line)
			}
		}
	}
	for _, c := range n.Content {
		if err := checkKeys(c); err != nil {
			return err
		}
	}
	return nil
}
