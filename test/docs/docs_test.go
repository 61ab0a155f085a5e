// Package docs checks the project's Markdown: README.md stays a landing page
// (at most 250 lines) and every relative link in README.md, docs/ and the
// packages' READMEs resolves to a file, and to a heading when it names one.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const readmeMaxLines = 250

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile("(?m)^#{1,6} +(.+?) *$")
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
	dropRE    = regexp.MustCompile("[^a-z0-9 _-]")
)

// root is the repository's top folder (this package is test/docs).
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// slug is the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces turned into dashes.
func slug(heading string) string {
	h := strings.ToLower(heading)
	h = strings.NewReplacer("`", "", "*", "").Replace(h)
	h = dropRE.ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// anchors lists the anchors of a Markdown file's headings (outside code fences).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		base := slug(m[1])
		s := base
		for n := 1; out[s]; n++ { // GitHub numbers repeated headings
			s = base + "-" + strconv.Itoa(n)
		}
		out[s] = true
	}
	return out
}

func markdownFiles(t *testing.T, top string) []string {
	t.Helper()
	files := []string{filepath.Join(top, "README.md")}
	for _, glob := range []string{"docs/*.md", "*/*/README.md", "*/README.md"} {
		m, err := filepath.Glob(filepath.Join(top, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

func TestReadmeIsALandingPage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move reference material into docs/", n, readmeMaxLines)
	}
}

func TestRelativeLinksResolve(t *testing.T) {
	top := root(t)
	for _, file := range markdownFiles(t, top) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := fenceRE.ReplaceAllString(string(data), "")
		rel, _ := filepath.Rel(top, file)
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %s does not exist", rel, target, path)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			body, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(body))[anchor] {
				t.Errorf("%s: link %q: no heading with anchor #%s", rel, target, anchor)
			}
		}
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Releases and registering the driver in Rancher":             "releases-and-registering-the-driver-in-rancher",
		"Harvester's VM mutator (mutating webhook)":                  "harvesters-vm-mutator-mutating-webhook",
		"Ownership: what a machine may touch":                        "ownership-what-a-machine-may-touch",
		"KubeVirt's subresource API (`subresources.kubevirt.io/v1`)": "kubevirts-subresource-api-subresourceskubevirtiov1",
		"Guest clusters (`--guest-clusters`)":                        "guest-clusters---guest-clusters",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
