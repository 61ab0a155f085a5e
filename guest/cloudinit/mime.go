package cloudinit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	mimemultipart "mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"slices"
	"strings"
)

// A document is one piece of user data with the MIME type it came with
// ("" when it came without one: its type is told from its first line, as
// cloud-init does).
type document struct {
	contentType string
	data        []byte
	where       string // "part 2", "part 2.1": where it sat in a MIME document
}

// Content types cloud-init handles (its part handlers). Cloud-config parts
// are merged; the others are passed on unchanged in their own part.
const (
	typeCloudConfig = "text/cloud-config"
	typePlain       = "text/plain"
)

var passThroughTypes = []string{
	"text/x-shellscript", "text/x-shellscript-per-boot", "text/x-shellscript-per-instance", "text/x-shellscript-per-once",
	"text/cloud-boothook", "text/part-handler", "text/x-include-url", "text/x-include-once-url", "text/jinja2",
	"text/cloud-config-archive", "text/upstart-job",
}

// maxMIMEDepth bounds nested multipart documents.
const maxMIMEDepth = 8

// isMIME reports whether data is a MIME document (headers first).
func isMIME(data []byte) bool {
	t := strings.TrimLeft(string(data), " \t\r\n\ufeff")
	return hasPrefixFold(t, "Content-Type:") || hasPrefixFold(t, "MIME-Version:")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// splitMIME reads a MIME user-data document into its leaf documents, in
// order. Nested multiparts are flattened; transfer encodings (base64,
// quoted-printable) are decoded.
func splitMIME(data []byte) ([]document, error) {
	data = bytes.TrimLeft(data, " \t\r\n\ufeff")
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not a valid MIME document: %w", err)
	}
	body, err := io.ReadAll(tp.R)
	if err != nil {
		return nil, fmt.Errorf("not a valid MIME document: %w", err)
	}
	return mimeDocuments(hdr, body, "", 0)
}

func mimeDocuments(hdr textproto.MIMEHeader, body []byte, where string, depth int) ([]document, error) {
	name := where
	if name == "" {
		name = "the MIME document"
	}
	body, err := decodeTransfer(hdr.Get("Content-Transfer-Encoding"), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ct := hdr.Get("Content-Type")
	if ct == "" {
		return []document{{contentType: "", data: body, where: name}}, nil
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("%s: Content-Type %q: %w", name, ct, err)
	}
	if !strings.HasPrefix(media, "multipart/") {
		return []document{{contentType: media, data: body, where: name}}, nil
	}
	if depth >= maxMIMEDepth {
		return nil, fmt.Errorf("%s: multipart documents nested more than %d deep", name, maxMIMEDepth)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, fmt.Errorf("%s: %s without a boundary", name, media)
	}
	r := mimemultipart.NewReader(bytes.NewReader(body), boundary)
	var docs []document
	for i := 1; ; i++ {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		partName := fmt.Sprintf("part %d", i)
		if where != "" {
			partName = fmt.Sprintf("%s.%d", where, i)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: not a valid MIME multipart document: %w", partName, err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", partName, err)
		}
		sub, err := mimeDocuments(p.Header, b, partName, depth+1)
		if err != nil {
			return nil, err
		}
		docs = append(docs, sub...)
	}
}

// decodeTransfer undoes a Content-Transfer-Encoding.
func decodeTransfer(enc string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "7bit", "8bit", "binary":
		return body, nil
	case "base64":
		compact := bytes.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, body)
		out := make([]byte, base64.StdEncoding.DecodedLen(len(compact)))
		n, err := base64.StdEncoding.Decode(out, compact)
		if err != nil {
			return nil, fmt.Errorf("Content-Transfer-Encoding base64: %w", err)
		}
		return out[:n], nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err != nil {
			return nil, fmt.Errorf("Content-Transfer-Encoding quoted-printable: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("Content-Transfer-Encoding %q is not supported (use 7bit, 8bit, base64 or quoted-printable)", enc)
}

// documents returns the documents of one user-data input: a MIME document's
// leaf parts, or the input itself.
func documents(data []byte) ([]document, error) {
	if !isMIME(data) {
		return []document{{data: data}}, nil
	}
	return splitMIME(data)
}

// handling says what Build does with a document: merge it as cloud-config,
// pass it on as a part of the given type, or skip it (empty).
func handling(d document) (merge bool, passType string, err error) {
	switch {
	case d.contentType == typeCloudConfig:
		return true, "", nil
	case d.contentType == "" || d.contentType == typePlain || d.contentType == "application/octet-stream":
		switch kind, _, _ := classify(d.data); kind {
		case kindCloudConfig:
			return true, "", nil
		case kindRaw:
			if isMIME(d.data) {
				return false, "", errors.New("a MIME document inside a text part is not supported: put its parts in the outer document")
			}
			return false, rawContentType(d.data), nil
		}
		return false, "", nil
	case slices.Contains(passThroughTypes, d.contentType):
		return false, d.contentType, nil
	}
	return false, "", fmt.Errorf("content type %s is not supported: cloud-init handles %s and %s (merged), and %s (passed on)",
		d.contentType, typeCloudConfig, typePlain, strings.Join(passThroughTypes, ", "))
}
