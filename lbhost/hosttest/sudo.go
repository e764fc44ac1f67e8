// The unprivileged login of the test hosts and its sudoers rules.

package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tfccm/tfccm/lbhost/hostfiles"
)

// sudoersFile is where the hosts' sudoers rules go on this machine (the
// hosts share its file system). Stop removes it.
func sudoersFile(user string) string { return "/etc/sudoers.d/tfccm-lbhosts-" + user }

// setUpSudoUser prepares user as docs/install-baremetal.md prepares the
// tfccm login on a real host: a system user (created once: a login shell,
// no password, not locked for key logins) and lbhost/hostfiles' sudoers
// rules for it (checked with visudo). dir, which holds the hosts' master
// sockets, becomes reachable by it (o+x on it and its ancestors).
func setUpSudoUser(user, dir string) error {
	if err := exec.Command("id", "-u", user).Run(); err != nil {
		if err := run("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
			"--user-group", "--password", "*", user); err != nil {
			return err
		}
	}
	f := sudoersFile(user)
	if err := os.WriteFile(f+".tmp", []byte(hostfiles.Sudoers(user)), 0o440); err != nil {
		return err
	}
	if err := run("visudo", "-cf", f+".tmp"); err != nil {
		_ = os.Remove(f + ".tmp")
		return err
	}
	if err := os.Rename(f+".tmp", f); err != nil {
		return err
	}
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("make %s reachable for %s: %w", d, user, err)
			}
		}
	}
	return nil
}

// RemoveSudoers removes the hosts' sudoers rules (sudo then refuses every
// command of the login: what a host without them does).
func (hs *Hosts) RemoveSudoers() error {
	if hs.sudoUser == "" {
		return nil
	}
	return os.Remove(sudoersFile(hs.sudoUser))
}

// InstallSudoers puts the hosts' sudoers rules (back) in place.
func (hs *Hosts) InstallSudoers() error {
	if hs.sudoUser == "" {
		return nil
	}
	return setUpSudoUser(hs.sudoUser, hs.dir)
}
