package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallELF is a valid 64-byte ELF header with no sections or segments:
// what debug/elf (and the kernel) recognise as an ELF object.
func smallELF(t *testing.T) []byte {
	t.Helper()
	h := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Ehsize: 64,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, h); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gitRepo makes a git repository in a new directory and stages files in it.
func gitRepo(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	return dir
}

func TestCleanTree(t *testing.T) {
	elfBytes := smallELF(t)
	big := bytes.Repeat([]byte("x"), MaxSize+1)
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		allowed map[string]bool
		bad     []string // files reported
	}{
		{name: "clean", files: map[string][]byte{"main.go": []byte("package main\n"), "limit.bin": bytes.Repeat([]byte("y"), MaxSize)}},
		{name: "text starting like PE", files: map[string][]byte{"notes.txt": []byte("MZ is not a header here\n")}},
		{name: "small ELF", files: map[string][]byte{"main.go": []byte("package main\n"), "tfccm": elfBytes}, bad: []string{"tfccm: ELF executable"}},
		{name: "over 1 MiB", files: map[string][]byte{"testdata/huge.json": big}, bad: []string{"testdata/huge.json: 1048577 bytes"}},
		{name: "both", files: map[string][]byte{"a/b": elfBytes, "c": big}, bad: []string{"a/b: ELF", "c: 1048577 bytes"}},
		{name: "merge conflict", files: map[string][]byte{"README.md": []byte("# t\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> branch\n")}, bad: []string{"README.md: unresolved merge conflict at line 2"}},
		{name: "conflict-like text", files: map[string][]byte{"doc.md": []byte("<<<<<<< HEAD is how git marks\nno end here\n=======\n")}},
		{name: "allowed", files: map[string][]byte{"testdata/huge.json": big}, allowed: map[string]bool{"testdata/huge.json": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := gitRepo(t, tc.files)
			var out bytes.Buffer
			err := run(dir, tc.allowed, &out)
			if (err != nil) != (len(tc.bad) > 0) {
				t.Fatalf("err = %v, want failure = %v; output:\n%s", err, len(tc.bad) > 0, out.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(tc.bad) == 0 {
				if out.Len() != 0 {
					t.Errorf("reported %q", out.String())
				}
				return
			}
			if len(lines) != len(tc.bad) {
				t.Fatalf("reported %q, want %d lines", out.String(), len(tc.bad))
			}
			for i, want := range tc.bad {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %d = %q, want prefix %q", i, lines[i], want)
				}
			}
		})
	}
}

// TestUntrackedIgnored: a binary that is only in the working tree (built,
// ignored) is not the repository's problem.
func TestUntrackedIgnored(t *testing.T) {
	dir := gitRepo(t, map[string][]byte{"main.go": []byte("package main\n")})
	if err := os.WriteFile(filepath.Join(dir, "tfccm"), smallELF(t), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, nil, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
}

func TestAllowedList(t *testing.T) {
	if _, err := parseAllowed(allowedTxt); err != nil {
		t.Fatalf("allowed.txt: %v", err)
	}
	got, err := parseAllowed("# c\n\ntestdata/a.bin   # golden image\n")
	if err != nil || !got["testdata/a.bin"] || len(got) != 1 {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parseAllowed("testdata/a.bin\n"); err == nil {
		t.Error("an entry without a reason was accepted")
	}
}
