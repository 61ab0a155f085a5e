package main

import "reflect"

// flatten lists the objects of objs, expanding slices one level.
func flatten(objs []any) []any {
	var out []any
	for _, o := range objs {
		v := reflect.ValueOf(o)
		if v.Kind() != reflect.Slice {
			out = append(out, o)
			continue
		}
		for i := range v.Len() {
			out = append(out, v.Index(i).Interface())
		}
	}
	return out
}
