package cloudinit

import "encoding/base64"

// WriteFile is one cloud-config write_files entry.
type WriteFile struct {
	Path        string `yaml:"path"`
	Content     string `yaml:"content"`
	Encoding    string `yaml:"encoding,omitempty"`
	Owner       string `yaml:"owner,omitempty"`
	Permissions string `yaml:"permissions,omitempty"`
}

// SecretFile is a root-only file (0600); its content is base64 so any byte
// survives.
func SecretFile(path string, content []byte) WriteFile {
	return WriteFile{Path: path, Content: base64.StdEncoding.EncodeToString(content), Encoding: "b64", Owner: "root:root", Permissions: "0600"}
}

// PrivateFile is a root-only (0600) text file, kept readable in the user data.
func PrivateFile(path string, content []byte) WriteFile {
	return WriteFile{Path: path, Content: string(content), Owner: "root:root", Permissions: "0600"}
}

// PlainFile is a world-readable configuration file (0644).
func PlainFile(path string, content []byte) WriteFile {
	return WriteFile{Path: path, Content: string(content), Owner: "root:root", Permissions: "0644"}
}
