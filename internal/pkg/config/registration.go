package config

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RegistrationWarning is the fixed WARNING text of every .runner file.
const RegistrationWarning = "This file is written by `forgeload register`. It holds this runner's secret token: do not edit or share it. Delete it to register again."

// Registration is the .runner file: who this runner is to the forge. Token is
// a credential: never log it.
type Registration struct {
	Warning   string   `json:"WARNING"`
	ID        int64    `json:"id"`
	UUID      string   `json:"uuid"`
	Name      string   `json:"name"`
	Token     string   `json:"token"`
	Address   string   `json:"address"`
	Labels    []string `json:"labels"`
	Ephemeral bool     `json:"ephemeral"`
}

// ErrNotRegistered is wrapped by [LoadRegistration] when the file does not
// exist.
var ErrNotRegistered = errors.New("not registered")

// LoadRegistration reads the registration file at path. A missing file
// fails with an error wrapping [ErrNotRegistered] (and fs.ErrNotExist) that
// says to run `forgeload register`; a malformed or incomplete file fails with
// an error saying how to recover.
func LoadRegistration(path string) (*Registration, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read registration file %q: %w: the file does not exist; run `forgeload register` first, or point runner.file at it (%w)", path, ErrNotRegistered, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read registration file %q: %w", path, err)
	}
	var r Registration
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse registration file %q: %w; it is damaged: delete it and run `forgeload register` again", path, err)
	}
	var missing []string
	if r.UUID == "" {
		missing = append(missing, "uuid")
	}
	if r.Token == "" {
		missing = append(missing, "token")
	}
	if r.Address == "" {
		missing = append(missing, "address")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("parse registration file %q: %v missing; delete it and run `forgeload register` again", path, missing)
	}
	// They travel as HTTP headers: a line break or other control character
	// (an edit gone wrong) would be refused there with a confusing error,
	// or split the header. The value is never quoted: it is a secret.
	for _, f := range []struct{ name, v string }{{"uuid", r.UUID}, {"token", r.Token}} {
		if i := strings.IndexFunc(f.v, func(c rune) bool { return c < 0x20 || c == 0x7f || c == ' ' }); i >= 0 {
			return nil, fmt.Errorf("parse registration file %q: the %s holds a space, line break or control character at byte %d; it was damaged (e.g. by an editor): delete the file and run `forgeload register` again", path, f.name, i)
		}
	}
	return &r, nil
}

// SaveRegistration writes r to path as 2-space-indented JSON, atomically
// (a temporary file in the same directory, synced, then renamed over path)
// and with mode 0600 whatever the umask. An empty Warning is filled with
// [RegistrationWarning]; r itself is not modified.
func SaveRegistration(path string, r *Registration) (err error) {
	if r == nil {
		return fmt.Errorf("save registration file %q: no registration given", path)
	}
	out := *r
	if out.Warning == "" {
		out.Warning = RegistrationWarning
	}
	if out.Labels == nil {
		out.Labels = []string{}
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("save registration file %q: encode: %w", path, err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save registration file %q: create a temporary file in %q: %w (check that the directory exists and is writable)", path, dir, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("save registration file %q: chmod: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("save registration file %q: write: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("save registration file %q: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save registration file %q: close: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("save registration file %q: rename into place: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // best effort: make the rename durable
		_ = d.Close()
	}
	return nil
}

// String describes r for logs with the token redacted, so that printing a
// Registration with %v or %+v never leaks the credential.
func (r Registration) String() string {
	tok := ""
	if r.Token != "" {
		tok = "[redacted]"
	}
	return fmt.Sprintf("{ID:%d UUID:%s Name:%s Token:%s Address:%s Labels:%v Ephemeral:%t}", r.ID, r.UUID, r.Name, tok, r.Address, r.Labels, r.Ephemeral)
}

// SecretUUID returns the runner uuid of a Forgejo offline registration
// secret, the one `forgejo forgejo-cli actions register --secret` gives
// the runner: the secret must be 40 hexadecimal characters, and its first
// 16 characters, as bytes (their ASCII codes, not hex-decoded), are the 16
// bytes of the uuid. The runner's token is the whole secret.
func SecretUUID(secret string) (string, error) {
	if len(secret) != 40 {
		return "", fmt.Errorf("a Forgejo runner secret is exactly 40 hexadecimal characters, this one has %d; make one with `forgejo forgejo-cli actions generate-secret` or `openssl rand -hex 20`", len(secret))
	}
	if _, err := hex.DecodeString(secret); err != nil {
		return "", errors.New("a Forgejo runner secret is 40 hexadecimal characters (0-9, a-f), this one has others; make one with `forgejo forgejo-cli actions generate-secret` or `openssl rand -hex 20`")
	}
	h := hex.EncodeToString([]byte(secret[:16]))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
}
