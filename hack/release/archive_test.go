package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var epoch = time.Unix(1763900000, 0)

// hostFiles writes a binary and a LICENSE into a new directory in the
// given order with the given file times and modes, as a build would.
func hostFiles(t *testing.T, mtime time.Time, binMode os.FileMode, licenseFirst bool) []member {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) member {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return member{name: name, src: p, exec: name == "tfccm"}
	}
	if licenseFirst {
		l := write("LICENSE", "Apache License", 0o600)
		return []member{l, write("tfccm", "\x7fELF binary", binMode)}
	}
	b := write("tfccm", "\x7fELF binary", binMode)
	return []member{write("LICENSE", "Apache License", 0o644), b}
}

// TestArchivesReproducible: tar.gz, tar and zip depend on the members'
// names and contents and the given time only — not on the host files'
// times, modes or the order they are listed in.
func TestArchivesReproducible(t *testing.T) {
	for _, w := range []struct {
		name  string
		write func(string, []member, time.Time) error
	}{{"tar.gz", writeTarGz}, {"tar", writeTar}, {"zip", writeZip}} {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string, ms []member, mtime time.Time) []byte {
				p := filepath.Join(dir, name)
				if err := w.write(p, ms, mtime); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			a := write("a", hostFiles(t, time.Unix(1, 0), 0o700, false), epoch)
			b := write("b", hostFiles(t, time.Now(), 0o755, true), epoch)
			if !bytes.Equal(a, b) {
				t.Fatal("same members, different archives")
			}
			if c := write("c", hostFiles(t, time.Now(), 0o755, true), epoch.Add(time.Second)); bytes.Equal(a, c) {
				t.Error("a different time gave the same archive")
			}
			ms := hostFiles(t, time.Now(), 0o755, true)
			if err := os.WriteFile(ms[1].src, []byte("\x7fELF other"), 0o755); err != nil {
				t.Fatal(err)
			}
			if d := write("d", ms, epoch); bytes.Equal(a, d) {
				t.Error("different content gave the same archive")
			}
		})
	}
}

// TestTarGzHeaders: sorted members, root-owned, fixed time and modes, and a
// gzip header without name or time.
func TestTarGzHeaders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.tar.gz")
	if err := writeTarGz(p, hostFiles(t, time.Now(), 0o700, false), epoch); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("gzip header: name %q, time %s", zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
		wantMode := int64(0o644)
		if h.Name == "tfccm" {
			wantMode = 0o755
		}
		if h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mode %o, owner %d:%d %q, time %s", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
	}
	if len(got) != 2 || got[0] != "LICENSE" || got[1] != "tfccm" {
		t.Errorf("members %v, want [LICENSE tfccm]", got)
	}
}

func TestZipHeaders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.zip")
	if err := writeZip(p, hostFiles(t, time.Now(), 0o700, true), epoch); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 2 || zr.File[0].Name != "LICENSE" || zr.File[1].Name != "tfccm" {
		t.Fatalf("members %v", zr.File)
	}
	if m := zr.File[1].Mode(); m != 0o755 {
		t.Errorf("tfccm mode %s", m)
	}
	if !zr.File[1].Modified.Equal(epoch) {
		t.Errorf("tfccm time %s", zr.File[1].Modified)
	}
}

func TestArchiveRejectsBadNames(t *testing.T) {
	for _, n := range []string{"", "/abs", "../up", "a/../b", "a//b"} {
		if err := writeTarGz(filepath.Join(t.TempDir(), "x"), []member{{name: n, body: []byte("x")}}, epoch); err == nil {
			t.Errorf("member %q accepted", n)
		}
	}
	dup := []member{{name: "a", body: []byte("1")}, {name: "a", body: []byte("2")}}
	if err := writeZip(filepath.Join(t.TempDir(), "x"), dup, epoch); err == nil {
		t.Error("a member twice accepted")
	}
}
