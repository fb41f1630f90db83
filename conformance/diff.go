package conformance

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"
)

var timeType = reflect.TypeFor[time.Time]()

// diff describes how a and b differ, or returns "" when they are equal.
// Times compare with time.Time.Equal, and nil and empty slices and maps are
// equal, so that values read back from any store compare like the values
// written.
func diff(a, b any) string {
	var out []string
	diffValue(&out, "", reflect.ValueOf(a), reflect.ValueOf(b))
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("and %d more", len(out)-4))
	}
	return strings.Join(out, "; ")
}

func diffValue(out *[]string, path string, a, b reflect.Value) {
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			*out = append(*out, fmt.Sprintf("%s: one side missing", path))
		}
		return
	}
	if a.Type() == timeType {
		ta, tb := a.Interface().(time.Time), b.Interface().(time.Time)
		if !ta.Equal(tb) {
			*out = append(*out, fmt.Sprintf("%s: %v != %v", path, ta, tb))
		}
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			diffValue(out, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
		}
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				*out = append(*out, fmt.Sprintf("%s: %q != %q", path, a.Bytes(), b.Bytes()))
			}
			return
		}
		if a.Len() != b.Len() {
			*out = append(*out, fmt.Sprintf("%s: length %d != %d", path, a.Len(), b.Len()))
			return
		}
		for i := 0; i < a.Len(); i++ {
			diffValue(out, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			*out = append(*out, fmt.Sprintf("%s: %d entries != %d", path, a.Len(), b.Len()))
			return
		}
		for _, k := range a.MapKeys() {
			diffValue(out, fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, fmt.Sprintf("%s: nil mismatch", path))
			}
			return
		}
		diffValue(out, path, a.Elem(), b.Elem())
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, fmt.Sprintf("%s: %v != %v", path, a.Interface(), b.Interface()))
		}
	}
}
