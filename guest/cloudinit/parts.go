package cloudinit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mime "mime/multipart"
	"net/textproto"
	"strings"

	"gopkg.in/yaml.v3"
)

// userEntry is one entry of cloud-config `users`.
type userEntry struct {
	Name              string   `yaml:"name"`
	Sudo              string   `yaml:"sudo,omitempty"`
	Shell             string   `yaml:"shell,omitempty"`
	LockPasswd        *bool    `yaml:"lock_passwd,omitempty"`
	SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys,omitempty"`
}

type chpasswdUser struct {
	Name     string `yaml:"name"`
	Password string `yaml:"password"`
	Type     string `yaml:"type"`
}

type chpasswd struct {
	Expire bool           `yaml:"expire"`
	Users  []chpasswdUser `yaml:"users"`
}

// baseConfig is the part the driver itself contributes.
type baseConfig struct {
	DisableRoot       *bool       `yaml:"disable_root,omitempty"`
	SSHPwauth         *bool       `yaml:"ssh_pwauth,omitempty"`
	SSHAuthorizedKeys []string    `yaml:"ssh_authorized_keys,omitempty"`
	Users             []any       `yaml:"users,omitempty"`
	Chpasswd          *chpasswd   `yaml:"chpasswd,omitempty"`
	WriteFiles        []WriteFile `yaml:"write_files,omitempty"`
	Packages          []string    `yaml:"packages,omitempty"`
	Runcmd            [][]string  `yaml:"runcmd,omitempty"`
}

func basePart(in Input) (*yaml.Node, error) {
	var c baseConfig
	user := strings.TrimSpace(in.User)
	if (len(in.SSHAuthorizedKeys) > 0 || in.Password != "") && user == "" {
		return nil, fmt.Errorf("a user name is needed for SSH keys or a password")
	}
	yes, no := true, false
	if user == "root" {
		if len(in.SSHAuthorizedKeys) > 0 || in.Password != "" {
			c.DisableRoot = &no
		}
		c.SSHAuthorizedKeys = in.SSHAuthorizedKeys
	} else if len(in.SSHAuthorizedKeys) > 0 || in.Password != "" {
		u := userEntry{Name: user, Sudo: "ALL=(ALL) NOPASSWD:ALL", Shell: "/bin/bash", SSHAuthorizedKeys: in.SSHAuthorizedKeys}
		if in.Password != "" {
			u.LockPasswd = &no
		}
		c.Users = []any{"default", u}
	}
	if in.Password != "" {
		c.SSHPwauth = &yes
		c.Chpasswd = &chpasswd{Expire: false, Users: []chpasswdUser{{Name: user, Password: in.Password, Type: "text"}}}
	}
	c.WriteFiles = in.WriteFiles
	if in.InstallQemuGuestAgent {
		c.Packages = []string{QemuGuestAgentPackage}
		c.Runcmd = [][]string{{"systemctl", "enable", "--now", "qemu-guest-agent.service"}}
	}
	var n yaml.Node
	if err := n.Encode(c); err != nil {
		return nil, err
	}
	return &n, nil
}

// mergeMapping merges src into dst (both mapping nodes); path names dst
// in errors. A null value never replaces an existing one (`packages:` must
// not drop the agent); a value of another kind (a string where a list is)
// is an error, as cloud-init could not use the merged result.
func mergeMapping(dst, src *yaml.Node, path string) error {
	for i := 0; i+1 < len(src.Content); i += 2 {
		key, val := src.Content[i], src.Content[i+1]
		j := indexOfKey(dst, key.Value)
		if j < 0 {
			dst.Content = append(dst.Content, key, val)
			continue
		}
		cur := dst.Content[j+1]
		at := path + key.Value
		switch {
		case isNullNode(val):
		case isNullNode(cur):
			dst.Content[j+1] = val
		case cur.Kind == yaml.MappingNode && val.Kind == yaml.MappingNode:
			if err := mergeMapping(cur, val, at+"."); err != nil {
				return err
			}
		case cur.Kind == yaml.SequenceNode && val.Kind == yaml.SequenceNode:
			if key.Value == "packages" {
				cur.Content = appendUniquePackages(cur.Content, val.Content)
			} else {
				cur.Content = append(cur.Content, val.Content...)
			}
			cur.Style = 0
		case cur.Kind == yaml.ScalarNode && val.Kind == yaml.ScalarNode:
			dst.Content[j+1] = val
		default:
			return fmt.Errorf("%s: is %s, but an earlier part (the login and agent settings, or the user data) makes it %s; give it as %s",
				at, nodeKind(val), nodeKind(cur), nodeKind(cur))
		}
	}
	return nil
}

func isNullNode(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

func indexOfKey(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// packageName is the name of a packages entry: "name" or ["name", "version"].
func packageName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.SequenceNode:
		if len(n.Content) > 0 {
			return n.Content[0].Value
		}
	}
	return ""
}

func appendUniquePackages(dst, src []*yaml.Node) []*yaml.Node {
	seen := map[string]bool{}
	for _, n := range dst {
		seen[packageName(n)] = true
	}
	for _, n := range src {
		name := packageName(n)
		if name != "" && seen[name] {
			continue
		}
		seen[name] = true
		dst = append(dst, n)
	}
	return dst
}

// moveInstallScriptLast moves runcmd entries that run the Rancher install
// script to the end of runcmd, keeping the order within each group.
func moveInstallScriptLast(root *yaml.Node) {
	i := indexOfKey(root, "runcmd")
	if i < 0 || root.Content[i+1].Kind != yaml.SequenceNode {
		return
	}
	seq := root.Content[i+1]
	var others, install []*yaml.Node
	agentEnabled := false
	for _, n := range seq.Content {
		if isAgentEnable(n) {
			if agentEnabled {
				continue
			}
			agentEnabled = true
		}
		if mentions(n, InstallScriptDir) {
			install = append(install, n)
		} else {
			others = append(others, n)
		}
	}
	seq.Content = append(others, install...)
}

// isAgentEnable reports whether a runcmd entry is
// `systemctl enable --now qemu-guest-agent[.service]` in list or string form.
func isAgentEnable(n *yaml.Node) bool {
	var words []string
	switch n.Kind {
	case yaml.ScalarNode:
		words = strings.Fields(n.Value)
	case yaml.SequenceNode:
		for _, c := range n.Content {
			words = append(words, c.Value)
		}
	}
	return strings.Join(words, " ") == "systemctl enable --now qemu-guest-agent.service" ||
		strings.Join(words, " ") == "systemctl enable --now qemu-guest-agent"
}

func mentions(n *yaml.Node, s string) bool {
	if n.Kind == yaml.ScalarNode {
		return strings.Contains(n.Value, s)
	}
	for _, c := range n.Content {
		if mentions(c, s) {
			return true
		}
	}
	return false
}

type rawPart struct {
	contentType string
	data        []byte
}

// multipart renders parts as a MIME multipart/mixed document. The boundary
// is derived from the content so the output is deterministic.
func multipart(parts []rawPart) ([]byte, error) {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p.data)
	}
	boundary := "BOUNDARY-" + hex.EncodeToString(h.Sum(nil))[:32]
	var body bytes.Buffer
	w := mime.NewWriter(&body)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, fmt.Errorf("multipart boundary: %w", err)
	}
	for i, p := range parts {
		if bytes.Contains(p.data, []byte("--"+boundary)) {
			return nil, fmt.Errorf("part %d contains the MIME boundary", i+1)
		}
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Type", p.contentType+`; charset="utf-8"`)
		hdr.Set("MIME-Version", "1.0")
		hdr.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="part-%03d"`, i+1))
		pw, err := w.CreatePart(hdr)
		if err != nil {
			return nil, fmt.Errorf("multipart part %d: %w", i+1, err)
		}
		if _, err := pw.Write(p.data); err != nil {
			return nil, fmt.Errorf("multipart part %d: %w", i+1, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("multipart close: %w", err)
	}
	var out bytes.Buffer
	out.WriteString("Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\r\n")
	out.WriteString("MIME-Version: 1.0\r\n\r\n")
	out.Write(body.Bytes())
	return out.Bytes(), nil
}
