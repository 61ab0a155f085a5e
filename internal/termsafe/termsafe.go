// Package termsafe makes text that came from a cluster safe to print on a
// terminal: a guest's Service name, an annotation, an API server's error
// message may carry escape sequences that clear the screen, move the
// cursor or recolour rows. The report layers (doctor's table and JSON, gc's
// table, JSON and notes, the CLI's error line) pass every such string
// through Text.
package termsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every control character (C0, DEL, C1: ESC, CR,
// newline, tab, backspace, BEL...) and every invisible format character
// (bidirectional overrides, zero-width characters) written as a Go escape
// (\x1b, \n, \u202e), and every byte that is not UTF-8 as \xNN. A backslash
// stays as it is. Printable text is unchanged.
func Text(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Lines is Text for a message of several lines (errors.Join's): each line
// is escaped and the line breaks stay.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Text(l)
	}
	return strings.Join(lines, "\n")
}

func needsEscape(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return true
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}
