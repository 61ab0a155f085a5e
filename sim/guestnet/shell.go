package guestnet

import (
	"errors"
	"strings"
)

// The simulated guest's sh reads a line as a list of simple commands
// separated by `;` (run in order; `exit` ends the list) and splits each
// into words, quotes removed, as POSIX sh does. That is enough for the
// forced command cloud-init gives root's keys (cc_ssh disable_root_opts:
// `echo '...';echo;sleep 10;exit 142`); no pipes, redirections,
// variables or control structures.

// errUnterminated is dash's message for an open quote, capitalised as
// dash prints it.
var errUnterminated = errors.New("Syntax error: Unterminated quoted string") //nolint:staticcheck // dash's own words

// splitList splits line at the `;` outside quotes and escapes.
func splitList(line string) []string {
	var parts []string
	var single, double, escaped bool
	start := 0
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case single:
			single = c != '\''
		case c == '\\':
			escaped = true
		case double:
			double = c != '"'
		case c == '\'':
			single = true
		case c == '"':
			double = true
		case c == ';':
			parts = append(parts, line[start:i])
			start = i + 1
		}
	}
	return append(parts, line[start:])
}

// words splits a simple command into its words: blanks separate them,
// '...' is literal, "..." keeps all but \$ \` \" \\ (which lose the
// backslash), and an unquoted \ quotes the next character.
func words(cmd string) ([]string, error) {
	var out []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, errUnterminated
			}
			w.WriteString(cmd[i+1 : i+1+end])
			i += end + 1
		case c == '"':
			n, err := doubleQuoted(cmd[i+1:], &w)
			if err != nil {
				return nil, err
			}
			i += n + 1
		case c == '\\' && i+1 < len(cmd):
			i++
			w.WriteByte(cmd[i])
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if inWord {
		out = append(out, w.String())
	}
	return out, nil
}

// doubleQuoted writes the text of s up to its closing `"` to w and
// returns the closing quote's index.
func doubleQuoted(s string, w *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i, nil
		case c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
			i++
			w.WriteByte(s[i])
		default:
			w.WriteByte(c)
		}
	}
	return 0, errUnterminated
}
