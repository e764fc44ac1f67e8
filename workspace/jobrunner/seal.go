package jobrunner

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// A runner's result is sealed: the stand-in gives each Job a random key,
// in the environment of its container "result" alone (the Job's spec,
// which runner pods cannot read), and that container writes the HMAC of
// the result archive under it beside the archive (AnnoResultMAC). The
// stand-in takes only a result whose HMAC matches. Whoever else may write
// Secrets in the runner namespace (another runner pod with the kubernetes
// backend's token, when the state lives there) can neither forge another
// Job's result nor alter one: at most make the run fail.

// AnnoResultMAC is the annotation on a result's first Secret: the hex
// HMAC-SHA256 of the whole result archive under the Job's key.
const AnnoResultMAC = "tfccm.io/result-mac"

// envResultKey carries the Job's key into its container "result".
const envResultKey = "TFCCM_RESULT_KEY"

// newResultKey is a new Job's key.
func newResultKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("result key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// setResultKey gives job's container "result" the key.
func setResultKey(job *batchv1.Job, key string) {
	cs := job.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == "result" {
			cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: envResultKey, Value: key})
		}
	}
}

// resultMAC is the HMAC of a result archive under key.
func resultMAC(key string, archive []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(archive)
	return hex.EncodeToString(m.Sum(nil))
}

// checkResult checks archive against the HMAC its Secret carries.
func checkResult(key, mac string, archive []byte) error {
	want := resultMAC(key, archive)
	if mac == "" || !hmac.Equal([]byte(mac), []byte(want)) {
		return fmt.Errorf("its %s does not match: not the result its runner pod wrote", AnnoResultMAC)
	}
	return nil
}
