package field

import (
	"errors"
	"fmt"
	"testing"
)

func TestRenameKeepsWrappersAndJoins(t *testing.T) {
	sentinel := errors.New("sentinel")
	err := fmt.Errorf("build thing: %w", errors.Join(
		Problem("cluster name", "required"),
		Invalid("zone", "bad zone", "not a valid label value"),
		Invalid("zone", "bad zone", "not a valid label value"),
		Problem("", "nothing to do: give one of").Referring("zone", "pool"),
		Problem("unknown field", "kept as it is"),
		sentinel,
	))
	flags := map[string]string{"cluster name": "--cluster-name", "zone": "--zone", "pool": "--pool"}
	got := Rename(err, func(f string) string {
		if v, ok := flags[f]; ok {
			return v
		}
		return f
	})
	want := "build thing: --cluster-name: required\n" +
		"--zone \"bad zone\": not a valid label value\n" +
		"--zone \"bad zone\": not a valid label value\n" +
		"nothing to do: give one of --zone, --pool\n" +
		"unknown field: kept as it is\n" +
		"sentinel"
	if got.Error() != want {
		t.Errorf("renamed:\n%s\nwant:\n%s", got, want)
	}
	if !errors.Is(got, sentinel) {
		t.Error("errors.Is lost the wrapped error")
	}
	var fe *Error
	if !errors.As(got, &fe) || fe.Field != "cluster name" {
		t.Errorf("errors.As: %+v", fe)
	}
	if Rename(nil, nil) != nil {
		t.Error("nil renamed")
	}
}
