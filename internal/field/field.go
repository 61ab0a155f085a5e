// Package field reports problems with user input by the field at fault, so
// pure packages stay free of flag names: a command-line front end renames
// every field to the flag the user typed (Rename), and a problem reads
// `--cluster-name "A_B": must be a DNS-1123 label ...`.
package field

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one problem with one input field.
type Error struct {
	Field  string   // the field at fault; "" for a problem of the input as a whole
	Value  *string  // the value given, when it helps; nil: not shown
	Detail string   // what is wrong and what would be valid
	See    []string // other fields the detail refers to, listed after it
	Cause  error    // the error behind the detail, for errors.Is and errors.As; nil: none
}

// Invalid is a problem with the value of field.
func Invalid(field, value, format string, args ...any) *Error {
	return &Error{Field: field, Value: &value, Detail: fmt.Sprintf(format, args...)}
}

// Problem is a problem with field as a whole (for example a missing value).
func Problem(field, format string, args ...any) *Error {
	return &Error{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Referring adds fields the detail refers to.
func (e *Error) Referring(fields ...string) *Error {
	e.See = append(e.See, fields...)
	return e
}

// Because records the error behind the detail (errors.Is and errors.As
// see it; the message is the detail's).
func (e *Error) Because(err error) *Error {
	e.Cause = err
	return e
}

// Unwrap is the error behind the detail, if any.
func (e *Error) Unwrap() error { return e.Cause }

func (e *Error) Error() string { return e.render(func(f string) string { return f }) }

func (e *Error) render(name func(string) string) string {
	var b strings.Builder
	b.WriteString(name(e.Field))
	if e.Value != nil {
		if e.Field != "" {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%q", *e.Value)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Detail)
	if len(e.See) > 0 {
		names := make([]string, len(e.See))
		for i, f := range e.See {
			names[i] = name(f)
		}
		b.WriteString(" " + strings.Join(names, ", "))
	}
	return b.String()
}

// Rename returns err with every field Error in it (wrapped or joined)
// rendered with name(field), for example the flag that sets the field.
// errors.Is and errors.As still see the original err.
func Rename(err error, name func(field string) string) error {
	if err == nil {
		return nil
	}
	msg, off := err.Error(), 0
	// The field errors appear in the message in tree order: rename each
	// after the previous one, so a renamed text is never renamed again.
	for _, fe := range all(err) {
		orig, repl := fe.Error(), fe.render(name)
		i := strings.Index(msg[off:], orig)
		if i < 0 {
			continue
		}
		msg = msg[:off+i] + repl + msg[off+i+len(orig):]
		off += i + len(repl)
	}
	return &renamed{msg: msg, err: err}
}

// all lists the field Errors in err's tree, outermost first.
func all(err error) []*Error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*Error); ok { //nolint:errorlint // the tree is walked by hand
		return []*Error{fe}
	}
	switch u := err.(type) { //nolint:errorlint // the tree is walked by hand
	case interface{ Unwrap() []error }:
		var out []*Error
		for _, e := range u.Unwrap() {
			out = append(out, all(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return all(u.Unwrap())
	}
	return nil
}

type renamed struct {
	msg string
	err error
}

func (r *renamed) Error() string { return r.msg }
func (r *renamed) Unwrap() error { return r.err }

// Problems lists the single problems of err: the leaves of its joined
// errors (errors.Join), in order. A wrapped error counts as one problem
// (its wrapping names the field).
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error }) //nolint:errorlint // the tree is walked by hand
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, Problems(e)...)
	}
	return out
}

// Fields lists the field of every problem of err; a problem that is no
// field Error yields "".
func Fields(err error) []string {
	var out []string
	for _, p := range Problems(err) {
		var fe *Error
		if errors.As(p, &fe) {
			out = append(out, fe.Field)
		} else {
			out = append(out, "")
		}
	}
	return out
}
