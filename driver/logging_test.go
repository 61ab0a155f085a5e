package driver

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// The plugin library's logger writes debug and info lines to the same
// stdout, which rancher-machine prints as its own output: the driver logs
// through internal/pluginlog only (see its doc).
func TestDriverLogsThroughPluginlog(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/rancher/machine/libmachine/log" {
				t.Errorf("%s imports %s: log through internal/pluginlog", f, p)
			}
		}
	}
}
