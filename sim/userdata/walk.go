// Stand-in for the guest's cloud-init, cloud-init 26.2: how it unpacks
// user data into parts (gzip, MIME multipart, jinja templates) and tells
// their kinds. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/user_data.py.

// Package userdata walks cloud-init user data the way cloud-init reads it:
// gzip layers, jinja templates, MIME multipart documents, #cloud-config
// documents and shell scripts.
package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
)

// Kind is the kind of one leaf document.
type Kind int

// Leaf document kinds.
const (
	CloudConfig Kind = iota // #cloud-config YAML
	Script                  // shell script or boothook
)

// maxDepth bounds nesting of multipart and gzip layers.
const maxDepth = 4

// maxSize bounds one decompressed or decoded document.
const maxSize = 16 << 20

// Visit is called for every leaf document; returning stop ends the walk.
type Visit func(kind Kind, body []byte) (stop bool, err error)

// Walk calls visit for every #cloud-config document and shell script in
// data, in order, until visit says stop or returns an error.
func Walk(data []byte, visit Visit) error {
	_, err := walk(data, 0, visit)
	return err
}

func walk(data []byte, depth int, visit Visit) (bool, error) {
	if depth > maxDepth {
		return true, fmt.Errorf("user data nested deeper than %d levels", maxDepth)
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return true, fmt.Errorf("gunzip user data: %w", err)
		}
		plain, err := io.ReadAll(io.LimitReader(zr, maxSize))
		if err != nil {
			return true, fmt.Errorf("gunzip user data: %w", err)
		}
		return walk(plain, depth+1, visit)
	}
	text := strings.TrimLeft(string(data), " \t\r\n")
	if strings.HasPrefix(text, "## template: jinja") {
		_, rest, _ := strings.Cut(text, "\n")
		return walk([]byte(rest), depth+1, visit)
	}
	switch {
	case strings.HasPrefix(text, "#cloud-config"):
		return visit(CloudConfig, []byte(text))
	case strings.HasPrefix(text, "#!"):
		return visit(Script, []byte(text))
	case looksLikeMIME(text):
		return walkMultipart([]byte(text), depth, visit)
	}
	return false, nil
}

func looksLikeMIME(text string) bool {
	head := strings.ToLower(text[:min(len(text), 200)])
	return strings.HasPrefix(head, "content-type:") || strings.HasPrefix(head, "mime-version:")
}

func walkMultipart(data []byte, depth int, visit Visit) (bool, error) {
	if depth > maxDepth {
		return true, fmt.Errorf("user data nested deeper than %d levels", maxDepth)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return true, fmt.Errorf("parse MIME user data: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return true, fmt.Errorf("parse MIME user data content type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := readPartBody(msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return true, err
		}
		return walkPart(msg.Header.Get("Content-Type"), body, depth, visit)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return true, fmt.Errorf("read MIME part: %w", err)
		}
		body, err := readPartBody(part, part.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return true, err
		}
		if stop, err := walkPart(part.Header.Get("Content-Type"), body, depth, visit); stop || err != nil {
			return true, err
		}
	}
}

func readPartBody(r io.Reader, encoding string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxSize))
	if err != nil {
		return nil, fmt.Errorf("read MIME part: %w", err)
	}
	if strings.EqualFold(strings.TrimSpace(encoding), "base64") {
		clean := strings.Join(strings.Fields(string(body)), "")
		dec, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, fmt.Errorf("decode base64 MIME part: %w", err)
		}
		return dec, nil
	}
	return body, nil
}

// walkPart handles one MIME part given its Content-Type header value.
func walkPart(contentType string, body []byte, depth int, visit Visit) (bool, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if strings.HasPrefix(mediaType, "multipart/") {
		doc := append([]byte("Content-Type: "+contentType+"\r\n\r\n"), body...)
		return walkMultipart(doc, depth+1, visit)
	}
	switch mediaType {
	case "text/cloud-config":
		return visit(CloudConfig, body)
	case "text/cloud-config-jsonp", "text/x-include-url", "text/part-handler":
		return false, nil
	case "text/x-shellscript", "text/x-shellscript-per-boot", "text/x-shellscript-per-instance",
		"text/x-shellscript-per-once", "text/cloud-boothook":
		return visit(Script, body)
	}
	// gzip, untyped parts and nested documents are sniffed by content.
	return walk(body, depth+1, visit)
}
