package jobrunner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// What of a workspace directory travels to a runner pod and back.
//
// A runner needs the root module, tofu's .terraform directory (backend
// settings, modules) and lock file, and the saved plan; providers come
// from the node's plugin cache (the pod links them again), and the
// engine's own files under .tfccm stay with the engine.

// Archive prefixes: the workspace's files, files named by absolute paths
// on the command line (extra), and the request or result document.
const (
	wsPrefix    = "ws/"
	extraPrefix = "extra/"
	docName     = "doc.json"
)

// carried reports whether a workspace file (a slash path relative to the
// workspace directory) travels between the engine and a runner pod.
func carried(rel string) bool {
	switch {
	case rel == ".tfccm/plan.tfplan":
		return true
	case rel == ".tfccm" || strings.HasPrefix(rel, ".tfccm/"):
		return false
	case rel == ".terraform/providers" || strings.HasPrefix(rel, ".terraform/providers/"):
		return false
	}
	return true
}

// skipDir reports whether no carried file can be under directory rel.
func skipDir(rel string) bool {
	return rel == ".terraform/providers" || strings.HasPrefix(rel, ".tfccm/")
}

// archive builds one gzip'd tar stream.
type archive struct {
	buf bytes.Buffer
	gz  *gzip.Writer
	tw  *tar.Writer
}

func newArchive() *archive {
	a := &archive{}
	a.gz = gzip.NewWriter(&a.buf)
	a.tw = tar.NewWriter(a.gz)
	return a
}

func (a *archive) add(name string, mode int64, data []byte) error {
	if err := a.tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := a.tw.Write(data)
	return err
}

// carriedFiles lists the carried regular files and symlinks under dir
// (slash paths relative to it).
func carriedFiles(dir string) ([]string, error) {
	var rels []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
		case d.IsDir():
			if skipDir(rel) {
				return filepath.SkipDir
			}
		case carried(rel) && (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0):
			rels = append(rels, rel)
		}
		return nil
	})
	return rels, err
}

// addDir adds every carried regular file and symlink under dir, sorted.
// A link travels as a link, never followed; one out of the workspace is
// refused (links.go), naming it.
func (a *archive) addDir(dir string) error {
	rels, err := carriedFiles(dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	defer root.Close()
	sort.Strings(rels)
	for _, rel := range rels {
		name := filepath.FromSlash(rel)
		st, err := root.Lstat(name)
		if err != nil {
			return fmt.Errorf("pack: %w", err)
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			target, err := root.Readlink(name)
			if err != nil {
				return fmt.Errorf("pack: %w", err)
			}
			if err := checkLink(rel, filepath.ToSlash(target)); err != nil {
				return fmt.Errorf("pack %s: %w", dir, err)
			}
			if err := a.tw.WriteHeader(&tar.Header{Name: wsPrefix + rel, Linkname: filepath.ToSlash(target), Typeflag: tar.TypeSymlink, Mode: 0o777}); err != nil {
				return err
			}
			continue
		}
		b, err := readRegular(root, name)
		if err != nil {
			return fmt.Errorf("pack: %w", err)
		}
		if err := a.add(wsPrefix+rel, int64(st.Mode().Perm()), b); err != nil {
			return err
		}
	}
	return nil
}

// readRegular reads the regular file name in root without following a
// link in its last element (one swapped in since the walk).
func readRegular(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (a *archive) bytes() ([]byte, error) {
	if err := a.tw.Close(); err != nil {
		return nil, err
	}
	if err := a.gz.Close(); err != nil {
		return nil, err
	}
	return a.buf.Bytes(), nil
}

// unpacked is an archive read back: the document, the extra files and the
// workspace files.
type unpacked struct {
	doc   []byte
	extra map[string][]byte
	ws    []entry
}

type entry struct {
	rel, link string
	mode      fs.FileMode
	data      []byte
}

// maxUnpacked bounds the bytes an archive may expand to.
const maxUnpacked = 512 << 20

func unpack(b []byte) (*unpacked, error) {
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	tr := tar.NewReader(io.LimitReader(gz, maxUnpacked))
	u := &unpacked{extra: map[string][]byte{}}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if err := checkLinks(u.ws); err != nil {
				return nil, fmt.Errorf("unpack: %w", err)
			}
			return u, nil
		}
		if err != nil {
			return nil, fmt.Errorf("unpack: %w", err)
		}
		name := path.Clean(h.Name)
		if name != h.Name || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			return nil, fmt.Errorf("unpack: unsafe name %q", h.Name)
		}
		var data []byte
		if h.Typeflag == tar.TypeReg {
			if data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("unpack: %w", err)
			}
		}
		switch {
		case name == docName:
			u.doc = data
		case strings.HasPrefix(name, extraPrefix):
			u.extra[strings.TrimPrefix(name, extraPrefix)] = data
		case strings.HasPrefix(name, wsPrefix):
			rel := strings.TrimPrefix(name, wsPrefix)
			if !carried(rel) {
				return nil, fmt.Errorf("unpack: %s is not a file runners carry", rel)
			}
			e := entry{rel: rel, mode: fs.FileMode(h.Mode).Perm(), data: data}
			switch h.Typeflag {
			case tar.TypeSymlink:
				e.link = h.Linkname
			case tar.TypeReg:
			default:
				continue
			}
			u.ws = append(u.ws, e)
		}
	}
}

// syncDir makes dir's carried files those of u: each written (a file
// whose content and mode are unchanged is left alone), and every carried
// file missing from u removed. Files that are not carried are untouched.
// Every change is made through an os.Root of dir, and an entry beyond a
// link already in dir is refused: nothing is written outside dir.
func (u *unpacked) syncDir(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	keep := map[string]bool{}
	for _, e := range u.ws {
		keep[e.rel] = true
		if err := syncEntry(root, e); err != nil {
			return fmt.Errorf("%s: %w", e.rel, err)
		}
	}
	have, err := carriedFiles(dir)
	if err != nil {
		return err
	}
	for _, rel := range have {
		if keep[rel] {
			continue
		}
		if err := root.Remove(filepath.FromSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// syncEntry writes one entry into root.
func syncEntry(root *os.Root, e entry) error {
	if l := linkOnDisk(root, e.rel); l != "" {
		return fmt.Errorf("lies beyond link %s: %w", l, ErrLink)
	}
	name := filepath.FromSlash(e.rel)
	if err := root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	if e.link != "" {
		if cur, err := root.Readlink(name); err == nil && cur == e.link {
			return nil
		}
		_ = root.RemoveAll(name)
		return root.Symlink(e.link, name)
	}
	st, err := root.Lstat(name)
	if err == nil && st.Mode().IsRegular() && st.Mode().Perm() == e.mode {
		if cur, err := readRegular(root, name); err == nil && bytes.Equal(cur, e.data) {
			return nil
		}
	}
	if err == nil && !st.Mode().IsRegular() {
		_ = root.RemoveAll(name)
	}
	tmp := name + ".tfccm-sync"
	_ = root.RemoveAll(tmp)
	if err := root.WriteFile(tmp, e.data, e.mode); err != nil {
		return err
	}
	if err := root.Chmod(tmp, e.mode); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// split cuts b into parts of at most PartSize bytes; more than MaxParts is
// an error naming the size and the limit (what names whose archive it is).
func split(b []byte, what string) ([][]byte, error) {
	if len(b) > PartSize*MaxParts {
		return nil, fmt.Errorf("%s packs to %.1f MiB (gzip), above the job runner's limit of %.1f MiB (%d Secrets of %d KiB)",
			what, float64(len(b))/(1<<20), float64(PartSize*MaxParts)/(1<<20), MaxParts, PartSize>>10)
	}
	var parts [][]byte
	for len(b) > PartSize {
		parts = append(parts, b[:PartSize])
		b = b[PartSize:]
	}
	return append(parts, b), nil
}
