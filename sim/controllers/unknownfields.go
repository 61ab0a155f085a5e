package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// unknownFields walks decoded JSON alongside a Go type and reports every
// object key that no field of the type accepts (exact, case-sensitive
// match, like the apiserver's strict decoding). It is needed because some
// KubeVirt types (VirtualMachineInstanceSpec among them) implement
// UnmarshalJSON with encoding/json, which silently drops unknown fields
// even under a strict decoder.
func unknownFields(value any, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := value.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			var errs []error
			for _, k := range slices.Sorted(maps.Keys(v)) {
				errs = append(errs, unknownFields(v[k], t.Elem(), joinPath(path, k))...)
			}
			return errs
		case reflect.Struct:
			fields := jsonFields(t)
			if len(fields) == 0 {
				return nil // an opaque value with its own JSON form (Time, Quantity, RawExtension)
			}
			var errs []error
			for _, k := range slices.Sorted(maps.Keys(v)) {
				ft, ok := fields[k]
				if !ok {
					errs = append(errs, fmt.Errorf("unknown field %q", joinPath(path, k)))
					continue
				}
				errs = append(errs, unknownFields(v[k], ft, joinPath(path, k))...)
			}
			return errs
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			var errs []error
			for i, item := range v {
				errs = append(errs, unknownFields(item, t.Elem(), path+"["+strconv.Itoa(i)+"]")...)
			}
			return errs
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var jsonFieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON names a struct accepts to their types, with
// embedded structs without a name promoted as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if cached, ok := jsonFieldCache.Load(t); ok {
		return cached.(map[string]reflect.Type)
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			inner := f.Type
			for inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				for k, v := range jsonFields(inner) {
					if _, taken := out[k]; !taken {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	jsonFieldCache.Store(t, out)
	return out
}

// unknownFieldsJSON runs unknownFields on raw JSON.
func unknownFieldsJSON(data []byte, into any) []error {
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return nil // the typed decode reports syntax errors
	}
	return unknownFields(generic, reflect.TypeOf(into), "")
}
