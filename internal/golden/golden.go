// Package golden compares test output with files in testdata/; run the
// tests with -update to rewrite them.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// Assert compares got with testdata/name, or writes it there with -update.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file %s (run the test with -update to create it): %v", path, err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// Must unwraps a builder's result; an error panics, which fails the test.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
