package cloudinit

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Document is user data merged once: the tool's parts and the user's in
// one cloud-config tree (plus the parts passed on unmerged). The tool's SSH
// authorized keys and write_files stay slots that Render fills, so a tool
// that only learns them later (a generated key, credentials issued at
// create) merges the user's parts once, early, and later only puts its
// own entries in their places, without merging anything again.
type Document struct {
	root  *yaml.Node
	keys  slot // the login user's ssh_authorized_keys
	files slot // write_files
	jinja bool
	extra []rawPart
}

// slot is the run of entries at the start of a sequence that came from the
// tool's own Input (n entries; seq nil when it had none).
type slot struct {
	what string // for errors
	seq  *yaml.Node
	n    int
}

// MergeDocument merges the tool's parts of in and then the user's parsed
// parts, in order, into one Document (see the package documentation for
// the rules). in.SSHAuthorizedKeys and in.WriteFiles may be stand-ins for
// entries known only later: Render replaces them.
func MergeDocument(in Input, user ...Part) (*Document, error) {
	merged, err := basePart(in)
	if err != nil {
		return nil, fmt.Errorf("build cloud-init base part: %w", err)
	}
	doc := &Document{root: merged, keys: keysSlot(merged), files: sequenceSlot(merged, "write_files")}
	for _, p := range user {
		for _, d := range p.docs {
			switch {
			case d.raw != nil:
				doc.extra = append(doc.extra, *d.raw)
			case d.node != nil:
				if err := mergeMapping(merged, cloneNode(d.node), ""); err != nil {
					return nil, partProblem(p.name, d.where, err)
				}
				doc.jinja = doc.jinja || d.jinja
			}
		}
	}
	moveInstallScriptLast(merged)
	return doc, nil
}

// keysSlot finds the SSH keys basePart wrote: root's own, or those of the
// login user's entry in users (its second entry, after "default").
func keysSlot(base *yaml.Node) slot {
	if s := sequenceSlot(base, "ssh_authorized_keys"); s.seq != nil {
		return s
	}
	if users := sequenceSlot(base, "users"); users.n == 2 && users.seq.Content[1].Kind == yaml.MappingNode {
		return sequenceSlot(users.seq.Content[1], "ssh_authorized_keys")
	}
	return slot{what: "ssh_authorized_keys"}
}

// sequenceSlot is the sequence at key of mapping m, as basePart wrote it.
func sequenceSlot(m *yaml.Node, key string) slot {
	s := slot{what: key}
	if i := indexOfKey(m, key); i >= 0 && m.Content[i+1].Kind == yaml.SequenceNode {
		s.seq, s.n = m.Content[i+1], len(m.Content[i+1].Content)
	}
	return s
}

// Marshal renders the document as merged: the cloud-config (with the jinja
// line when a part was a template), or a MIME multipart document when
// parts were passed on unmerged.
func (d *Document) Marshal() ([]byte, error) {
	var out bytes.Buffer
	if d.jinja {
		out.WriteString(JinjaHeader + "\n")
	}
	out.WriteString(CloudConfigHeader + "\n")
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(d.root); err != nil {
		return nil, fmt.Errorf("encode cloud-config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode cloud-config: %w", err)
	}
	if len(d.extra) == 0 {
		return out.Bytes(), nil
	}
	parts := append([]rawPart{{contentType: "text/cloud-config", data: out.Bytes()}}, d.extra...)
	return multipart(parts)
}

// Render marshals the document with keys and files in place of the SSH
// authorized keys and write_files the tool's Input had: exactly what Merge
// returns for that Input with these keys and files. keys (files) must be
// empty exactly when the Input's were, as they decide the document's
// shape (the login user's entry, the write_files key). The document is
// left as it was; Render is not safe for concurrent use.
func (d *Document) Render(keys []string, files []WriteFile) ([]byte, error) {
	restoreKeys, err := d.keys.fill(keys)
	if err != nil {
		return nil, err
	}
	defer restoreKeys()
	restoreFiles, err := d.files.fill(files)
	if err != nil {
		return nil, err
	}
	defer restoreFiles()
	return d.Marshal()
}

// fill puts the entries encoded from values in place of the slot's, until
// the returned function restores them.
func (s slot) fill(values any) (func(), error) {
	var n yaml.Node
	if err := n.Encode(values); err != nil {
		return nil, fmt.Errorf("encode %s: %w", s.what, err)
	}
	if (len(n.Content) == 0) != (s.n == 0) {
		return nil, fmt.Errorf("render cloud-config: %d %s entries where the document was merged with %d", len(n.Content), s.what, s.n)
	}
	if s.seq == nil {
		return func() {}, nil
	}
	saved := s.seq.Content
	s.seq.Content = append(n.Content, saved[s.n:]...)
	return func() { s.seq.Content = saved }, nil
}
