// Stand-in for the guest's cloud-init, cloud-init 26.2: the files its
// write_files entries write. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/config/cc_write_files.py.

package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is one file cloud-init writes (write_files), content decoded.
type File struct {
	Path        string
	Content     []byte
	Permissions string
}

type writeFile struct {
	Path        string `yaml:"path"`
	Content     string `yaml:"content"`
	Encoding    string `yaml:"encoding"`
	Permissions string `yaml:"permissions"`
	Append      bool   `yaml:"append"`
}

// WriteFiles returns the files the write_files entries of every
// #cloud-config document in data write, in order; a later entry for the
// same path replaces (or with append: true, extends) an earlier one.
func WriteFiles(data []byte) ([]File, error) {
	var files []File
	index := map[string]int{}
	err := Walk(data, func(kind Kind, body []byte) (bool, error) {
		if kind != CloudConfig {
			return false, nil
		}
		var doc struct {
			WriteFiles []writeFile `yaml:"write_files"`
		}
		if err := yaml.Unmarshal(body, &doc); err != nil {
			return true, fmt.Errorf("parse #cloud-config: %w", err)
		}
		for i, wf := range doc.WriteFiles {
			content, err := decodeContent(wf.Content, wf.Encoding)
			if err != nil {
				return true, fmt.Errorf("write_files[%d] %s: %w", i, wf.Path, err)
			}
			if j, seen := index[wf.Path]; seen {
				if wf.Append {
					content = append(files[j].Content, content...)
				}
				files[j] = File{Path: wf.Path, Content: content, Permissions: wf.Permissions}
				continue
			}
			index[wf.Path] = len(files)
			files = append(files, File{Path: wf.Path, Content: content, Permissions: wf.Permissions})
		}
		return false, nil
	})
	return files, err
}

// decodeContent undoes a write_files encoding as cloud-init does.
func decodeContent(content, encoding string) ([]byte, error) {
	data := []byte(content)
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "", "text/plain":
		return data, nil
	case "b64", "base64":
		return b64(content)
	case "gz", "gzip":
		return gunzip(data)
	case "gz+b64", "gzip+b64", "gz+base64", "gzip+base64":
		raw, err := b64(content)
		if err != nil {
			return nil, err
		}
		return gunzip(raw)
	}
	return nil, fmt.Errorf("encoding %q: use b64, gzip, gz+b64 or none", encoding)
}

func b64(s string) ([]byte, error) {
	out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, fmt.Errorf("decode base64: %w", err)
	}
	return out, nil
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxSize))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	return out, nil
}
