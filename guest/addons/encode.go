package addons

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// ToMap converts a typed object to its API map form without null fields or
// a status (the builders say what is wanted; the cluster reports status).
func ToMap(obj runtime.Object) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	dropNulls(m)
	delete(m, "status")
	return m, nil
}

func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}

// EncodeYAML marshals objects as a multi-document YAML stream.
func EncodeYAML(objs []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for _, obj := range objs {
		m, err := ToMap(obj)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(m); err != nil {
			return nil, fmt.Errorf("marshal %T: %w", obj, err)
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
