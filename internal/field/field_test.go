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

func TestProblemsAndFields(t *testing.T) {
	plain := errors.New("plain")
	wrapped := fmt.Errorf("--flag: %w", Problem("inner", "x"))
	err := errors.Join(Invalid("a", "v", "bad"), errors.Join(plain, wrapped), nil)
	if got := Problems(err); len(got) != 3 || got[1] != plain || got[2] != wrapped { //nolint:errorlint // identity is the point
		t.Errorf("Problems = %v", got)
	}
	if got := Fields(err); len(got) != 3 || got[0] != "a" || got[1] != "" || got[2] != "inner" {
		t.Errorf("Fields = %q", got)
	}
	if Problems(nil) != nil {
		t.Errorf("Problems(nil) not empty")
	}
}

func TestBecauseKeepsTheCause(t *testing.T) {
	cause := errors.New("disk full")
	err := fmt.Errorf("save: %w", Problem("output", "cannot write: %v", cause).Because(cause))
	if !errors.Is(err, cause) {
		t.Error("errors.Is lost the cause")
	}
	if got, want := Rename(err, func(f string) string { return "--" + f }).Error(), "save: --output: cannot write: disk full"; got != want {
		t.Errorf("renamed %q, want %q", got, want)
	}
}
