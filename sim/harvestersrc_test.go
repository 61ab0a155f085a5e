package sim

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The facts the simulator takes from Harvester, read from the harvester
// module this project builds with (go.mod): a Harvester bump shows here.

const harvesterModule = "github.com/harvester/harvester"

type goModule struct {
	Path, Version, Dir, Error string
}

// harvesterModuleDir is the harvester module's directory in the module
// cache, downloaded if it is not there yet.
func harvesterModuleDir(t *testing.T) string {
	t.Helper()
	var m goModule
	goJSON(t, &m, "list", "-m", "-json", harvesterModule)
	if m.Version == "" {
		t.Fatalf("go list -m %s: no version; is it still in go.mod?", harvesterModule)
	}
	if m.Dir == "" {
		var d goModule
		goJSON(t, &d, "mod", "download", "-json", harvesterModule+"@"+m.Version)
		if d.Error != "" {
			t.Fatalf("go mod download %s@%s: %s", harvesterModule, m.Version, d.Error)
		}
		m.Dir = d.Dir
	}
	if _, err := os.Stat(filepath.Join(m.Dir, "go.mod")); err != nil {
		t.Fatalf("harvester module %s@%s: no directory (%q): %v", harvesterModule, m.Version, m.Dir, err)
	}
	return m.Dir
}

func goJSON(t *testing.T, into any, args ...string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("go", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(out, into); err != nil {
		t.Fatalf("go %s: decode %q: %v", strings.Join(args, " "), out, err)
	}
}

// chartDocuments reads a Helm template as YAML documents: the lines with
// template actions are left out (they only add labels and a namespace).
func chartDocuments(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read Harvester's chart: %v", err)
	}
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, "{{") {
			kept = append(kept, line)
		}
	}
	var docs [][]byte
	for _, doc := range strings.Split(strings.Join(kept, "\n"), "\n---") {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// decodeYAML decodes a chart document into an API type through JSON, so
// the type's JSON field names apply.
func decodeYAML(t *testing.T, doc []byte, into any) {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(doc, &m); err != nil {
		t.Fatalf("decode Harvester's chart document: %v\n%s", err, doc)
	}
	data, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(data, into)
	}
	if err != nil {
		t.Fatalf("decode Harvester's chart document: %v\n%s", err, doc)
	}
}

// goSource is the parsed non-test Go files of one package directory, with
// its package-level string constants.
type goSource struct {
	files  []*ast.File
	consts map[string]string
}

func parseGoPackage(t *testing.T, dir string) goSource {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	src := goSource{consts: map[string]string{}}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		src.files = append(src.files, f)
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok {
							src.consts[id.Name] = s
						}
					}
				}
			}
		}
	}
	return src
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// varValue is the expression a package-level var is initialised with.
func (g goSource) varValue(name string) ast.Expr {
	for _, f := range g.files {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name == name && i < len(vs.Values) {
						return vs.Values[i]
					}
				}
			}
		}
	}
	return nil
}
