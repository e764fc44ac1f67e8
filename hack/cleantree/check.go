package main

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"fmt"
	"os"
	"path/filepath"
)

// check returns what is wrong with the tracked file rel under dir, or "".
// A file deleted from the working tree, a symbolic link or a submodule is
// not checked (there is no content of its own to judge).
func check(dir, rel string) (string, error) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	st, err := os.Lstat(p)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", nil
	}
	if kind := executable(p); kind != "" {
		return kind + " executable", nil
	}
	if st.Size() > MaxSize {
		return fmt.Sprintf("%d bytes (limit %d)", st.Size(), MaxSize), nil
	}
	body, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	if line := conflictAt(body); line > 0 {
		return fmt.Sprintf("unresolved merge conflict at line %d", line), nil
	}
	return "", nil
}

// conflictAt returns the line of the first merge conflict git left in
// body (a "<<<<<<< " line, then "=======", then a ">>>>>>> " line), or 0.
func conflictAt(body []byte) int {
	start, middle := 0, false
	for i, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case bytes.HasPrefix(line, []byte("<<<<<<< ")):
			start, middle = i+1, false
		case start > 0 && string(line) == "=======":
			middle = true
		case start > 0 && middle && bytes.HasPrefix(line, []byte(">>>>>>> ")):
			return start
		}
	}
	return 0
}

// executable names the object format p is in (ELF, PE, Mach-O), or "",
// by the standard library's own parsers.
func executable(p string) string {
	if f, err := elf.Open(p); err == nil {
		f.Close()
		return "ELF"
	}
	if f, err := pe.Open(p); err == nil {
		f.Close()
		return "PE"
	}
	if f, err := macho.Open(p); err == nil {
		f.Close()
		return "Mach-O"
	}
	if f, err := macho.OpenFat(p); err == nil {
		f.Close()
		return "Mach-O (universal)"
	}
	return ""
}
