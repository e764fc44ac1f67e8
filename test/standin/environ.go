package standin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// EnvEnviron names a JSON-lines file each stand-in process appends its
// environment to when it starts: every variable's name with the
// Fingerprint of its value, never the value. Tests read it to
// see which credentials a provider process was given.
const EnvEnviron = "TFCCM_STANDIN_ENVIRON"

// Environ is one stand-in process's environment (EnvEnviron).
type Environ struct {
	Provider string `json:"provider"`
	// Dir is the process's working directory: the workspace tofu runs in.
	Dir  string            `json:"dir"`
	Vars map[string]string `json:"vars"` // name -> Fingerprint(value)
}

// recordEnviron appends this process's environment to the EnvEnviron
// file, if one is set.
func recordEnviron(provider string) error {
	file := os.Getenv(EnvEnviron)
	if file == "" {
		return nil
	}
	dir, _ := os.Getwd()
	rec := Environ{Provider: provider, Dir: dir, Vars: map[string]string{}}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		rec.Vars[k] = Fingerprint(v)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("stand-in environ: %w", err)
	}
	defer f.Close()
	_, err = f.Write(append(line, '\n'))
	return err
}

// Environs reads the environments the Env's stand-in processes started
// with (oldest first).
func (e *Env) Environs(t testing.TB) []Environ {
	t.Helper()
	f, err := os.Open(e.EnvironLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Environ
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r Environ
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
