package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// member is one file of a release archive: its name inside the archive, its
// content (a host file, or body) and whether it is executable. Every other
// attribute (owner, time, order) is fixed by the writers below, so the
// archive depends on the members' names and contents only.
type member struct {
	name string
	src  string
	body []byte
	exec bool
}

func (m member) content() ([]byte, error) {
	if m.src == "" {
		return m.body, nil
	}
	return os.ReadFile(m.src)
}

func (m member) mode() int64 {
	if m.exec {
		return 0o755
	}
	return 0o644
}

// sorted checks names (relative, clean, unique) and returns members in
// name order.
func sorted(members []member) ([]member, error) {
	out := append([]member(nil), members...)
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	for i, m := range out {
		if m.name == "" || path.IsAbs(m.name) || path.Clean(m.name) != m.name || strings.HasPrefix(m.name, "../") {
			return nil, fmt.Errorf("archive member %q is not a clean relative path", m.name)
		}
		if i > 0 && out[i-1].name == m.name {
			return nil, fmt.Errorf("archive member %q twice", m.name)
		}
	}
	return out, nil
}

// writeTarGz writes members as a gzip-compressed tar to file: sorted by
// name, owned by 0:0 without user names, every time mtime, and a gzip header
// without name or time. Parent directories are not recorded.
func writeTarGz(file string, members []member, mtime time.Time) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if err := writeTarTo(zw, members, mtime); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return writeFile(file, buf.Bytes())
}

// writeTar is writeTarGz without compression (an oci-archive).
func writeTar(file string, members []member, mtime time.Time) error {
	var buf bytes.Buffer
	if err := writeTarTo(&buf, members, mtime); err != nil {
		return err
	}
	return writeFile(file, buf.Bytes())
}

func writeTarTo(w io.Writer, members []member, mtime time.Time) error {
	ms, err := sorted(members)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	mtime = mtime.UTC().Truncate(time.Second)
	for _, m := range ms {
		b, err := m.content()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: m.name, Mode: m.mode(), Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeZip writes members as a zip to file: sorted by name, deflated,
// every time mtime (the zip's DOS time, no extended timestamps).
func writeZip(file string, members []member, mtime time.Time) error {
	ms, err := sorted(members)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		b, err := m.content()
		if err != nil {
			return err
		}
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: mtime.UTC().Truncate(time.Second)}
		h.SetMode(os.FileMode(m.mode()))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return writeFile(file, buf.Bytes())
}

// readTarGz returns the regular files of a gzip-compressed tar (the chart
// `helm package` wrote), to be written again by writeTarGz.
func readTarGz(file string) ([]member, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	tr := tar.NewReader(zr)
	var out []member
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			out = append(out, member{name: path.Clean(h.Name), body: b, exec: h.Mode&0o111 != 0})
		case tar.TypeDir:
		default:
			return nil, fmt.Errorf("%s: %s has unsupported type %c", file, h.Name, h.Typeflag)
		}
	}
}

// dirMembers lists every regular file under dir as a member named by its
// slash-separated path relative to dir.
func dirMembers(dir string) ([]member, error) {
	var out []member
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, member{name: filepath.ToSlash(rel), src: p})
		return nil
	})
	return out, err
}

// writeFile writes b to file through a temporary file, 0644.
func writeFile(file string, b []byte) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
