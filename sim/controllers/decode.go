package controllers

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// decodeStrict decodes an object served by the apiserver into a typed Go
// value, refusing unknown and duplicate fields. The CRDs of the simulator
// preserve unknown fields, so this is where a malformed spec is caught.
func decodeStrict(u *unstructured.Unstructured, into any) error {
	data, err := u.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return decodeStrictJSON(data, into)
}

// decodeStrictJSON decodes JSON case-sensitively and reports every unknown
// or duplicate field at once.
func decodeStrictJSON(data []byte, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(data, into)
	if err != nil {
		return err
	}
	// Unknown fields come from the type walk, which also sees inside types
	// with their own (lenient) UnmarshalJSON; keep the other strict errors
	// (duplicate fields).
	errs := unknownFieldsJSON(data, into)
	for _, e := range strictErrs {
		if !strings.HasPrefix(e.Error(), "unknown field") {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// toUnstructured converts a typed object to the map form the dynamic client
// sends.
func toUnstructured(obj any) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T to unstructured: %w", obj, err)
	}
	return m, nil
}
