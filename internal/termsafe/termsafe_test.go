package termsafe

import (
	"strings"
	"testing"
	"unicode"

	"github.com/harvester-kit/harvester-machine/internal/hostile"
)

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web", "web"},
		{"ünï ☃ 日本語", "ünï ☃ 日本語"},
		{"\x1b[2J\x1b[Hcleared", `\x1b[2J\x1b[Hcleared`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"row\nFAKE\tOK", `row\nFAKE\tOK`},
		{"over\rwrite", `over\rwrite`},
		{"bell\a back\b del\x7f", `bell\x07 back\x08 del\x7f`},
		{"c1 \u009b31m", `c1 \x9b31m`},
		{"\u202eRTL override", `\u202eRTL override`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"bad \xff utf8", `bad \xff utf8`},
		{"nul\x00byte", `nul\x00byte`},
		{`back\slash`, `back\slash`},
	}
	for _, tc := range tests {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// No hostile value keeps a control or format character after Text.
func TestTextHostileValues(t *testing.T) {
	for _, v := range append(hostile.Values(), "\x1b]0;title\x07", "\x1bc", "\x9b2J") {
		for _, r := range Text(v) {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Errorf("Text(%q) keeps %U", v, r)
			}
		}
	}
}

func TestLines(t *testing.T) {
	if got := Lines("first \x1b[2J\nsecond\tx"); got != "first \\x1b[2J\nsecond\\tx" {
		t.Errorf("Lines = %q", got)
	}
	if strings.Count(Lines("a\nb\nc"), "\n") != 2 {
		t.Error("Lines lost a line break")
	}
}
