// Package yamlutil marshals YAML the way every artifact of this project is
// written: gopkg.in/yaml.v3 with a two-space indent.
package yamlutil

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// Marshal encodes v as one YAML document with a two-space indent.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
