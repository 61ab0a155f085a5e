// Package docs checks the project's Markdown: README.md stays a landing page
// (at most 250 lines, no paragraph over 8 lines, no table row over 400
// characters, no commit hash: its figures are today's, not a history) and
// every relative link in README.md, docs/ and the packages' READMEs
// resolves to a file, and to a heading when it names one.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	readmeMaxLines          = 250
	readmeMaxParagraphLines = 8
	readmeMaxTableLine      = 400
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile("(?m)^#{1,6} +(.+?) *$")
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
	dropRE    = regexp.MustCompile("[^a-z0-9 _-]")
	// hexRE: a word of 7 to 40 lower-case hex digits, as git abbreviates a
	// commit (a longer run, a sha256 sum, is no such word).
	hexRE    = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	digitRE  = regexp.MustCompile(`[0-9]`)
	letterRE = regexp.MustCompile(`[a-f]`)
	// itemRE starts a list item, which is a block of its own.
	itemRE = regexp.MustCompile(`^\s*([-*+]|[0-9]+\.) `)
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

// commitHashes lists the words of text outside code fences that look like
// a commit hash: 7 to 40 hex digits, with both digits and letters (so
// neither a number nor an English word such as "defaced").
func commitHashes(text string) []string {
	var out []string
	for _, w := range hexRE.FindAllString(fenceRE.ReplaceAllString(text, ""), -1) {
		if digitRE.MatchString(w) && letterRE.MatchString(w) {
			out = append(out, w)
		}
	}
	return out
}

// paragraphs splits Markdown into its paragraphs: runs of non-blank lines
// outside code fences and tables; a heading is one of its own, and a list
// item starts a new one. Each is returned as its lines.
func paragraphs(text string) [][]string {
	var out [][]string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			fenced = !fenced
		case fenced:
		case trimmed == "" || strings.HasPrefix(trimmed, "|"):
			flush()
		case strings.HasPrefix(trimmed, "#"):
			flush()
			out = append(out, []string{line})
		case itemRE.MatchString(line):
			flush()
			cur = []string{line}
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return out
}

func readme(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadmeNamesNoCommit: the README's figures are the current ones
// (a figure changes in the commit that changes it), not a history.
func TestReadmeNamesNoCommit(t *testing.T) {
	if hashes := commitHashes(readme(t)); len(hashes) > 0 {
		t.Errorf("README.md names commits %v: give today's figure with its date, no history", hashes)
	}
}

func TestReadmeParagraphsAreShort(t *testing.T) {
	for _, p := range paragraphs(readme(t)) {
		if len(p) > readmeMaxParagraphLines {
			t.Errorf("README.md: a paragraph of %d lines (at most %d): %q...", len(p), readmeMaxParagraphLines, p[0])
		}
	}
}

func TestReadmeTableRowsAreShort(t *testing.T) {
	for _, line := range strings.Split(readme(t), "\n") {
		if strings.HasPrefix(line, "|") && len(line) > readmeMaxTableLine {
			t.Errorf("README.md: a table row of %d characters (at most %d): %.60q...", len(line), readmeMaxTableLine, line)
		}
	}
}

func TestCommitHashes(t *testing.T) {
	text := "On a0df98b and 3d8a3bd4c1e2f0a9b8c7d6e5f4a3b2c1d0e9f8a7 it took 1234567 s; defaced, deadbeef and v1.34.4 are no commits,\n" +
		"nor is sha256 " + strings.Repeat("ab12", 16) + "\n```\ngit checkout 5793201f\n```\n"
	got := commitHashes(text)
	want := []string{"a0df98b", "3d8a3bd4c1e2f0a9b8c7d6e5f4a3b2c1d0e9f8a7"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("commitHashes = %q, want %q", got, want)
	}
}

func TestParagraphs(t *testing.T) {
	text := "# Title\none\ntwo\n\n- item a\n  more a\n- item b\n| t | u |\n|---|---|\nthree\n```sh\ncode\n\ncode\n```\nfour\n"
	var got []string
	for _, p := range paragraphs(text) {
		got = append(got, strings.Join(p, "/"))
	}
	want := []string{"# Title", "one/two", "- item a/  more a", "- item b", "three", "four"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("paragraphs = %q, want %q", got, want)
	}
}
