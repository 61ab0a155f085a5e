package vmspec_test

import (
	"encoding/json"
	"testing"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

func goldenJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, name, append(b, '\n'))
}
