package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommentToken: the comment token comes from the config, the env or
// a file that only its owner may read; it is never shown, in a printed
// Config nor in an error.
func TestCommentToken(t *testing.T) {
	t.Parallel()
	const tok = "s3cr3t-comment-token"
	cfg, err := Parse("forgeload.yaml", nil, func(k string) string {
		return map[string]string{"FORGELOAD_RUNNER_COMMENT_TOKEN": tok}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cfg.Runner.ReadCommentToken(); err != nil || string(got) != tok {
		t.Fatalf("comment token from the env = %q, %v", got, err)
	}
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, tok) || !strings.Contains(s, "[redacted]") {
			t.Errorf("the printed config shows the token or does not say it is redacted: %s", s)
		}
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := Runner{CommentTokenFile: file}
	if got, err := r.ReadCommentToken(); err != nil || string(got) != tok {
		t.Fatalf("comment token from a 0600 file = %q, %v", got, err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadCommentToken(); err == nil || !strings.Contains(err.Error(), "runner.comment_token_file "+file+": has mode 0644, so other users may read the token: chmod 600 "+file) {
		t.Errorf("a 0644 token file: %v, want an error naming the key, the mode and chmod 600", err)
	}
	multi := filepath.Join(dir, "multi")
	if err := os.WriteFile(multi, []byte(tok+" "+tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{multi, filepath.Join(dir, "missing"), dir} {
		_, err := (&Runner{CommentTokenFile: bad}).ReadCommentToken()
		if err == nil || !strings.Contains(err.Error(), "runner.comment_token_file") || strings.Contains(err.Error(), tok) {
			t.Errorf("token file %s: %v, want an error naming the key without the token", bad, err)
		}
	}

	_, err = Parse("forgeload.yaml", []byte("runner:\n  comment_token: "+tok+"\n  comment_token_file: "+file+"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "runner.comment_token: and runner.comment_token_file are both set") || strings.Contains(err.Error(), tok) {
		t.Errorf("both keys: %v, want an error naming both without the token", err)
	}
	_, err = Parse("forgeload.yaml", []byte("runner:\n  comment_token: \""+tok+"\\n"+tok+"\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "forgeload.yaml:2: runner.comment_token: is not a token") || strings.Contains(err.Error(), tok) {
		t.Errorf("a token with a line break: %v, want an error naming the key without the token", err)
	}
}

// FuzzCommentToken: whatever runner.comment_token holds, the config
// either takes it as one token or refuses it with an error that names the
// key and does not show the value; a printed config never shows it.
func FuzzCommentToken(f *testing.F) {
	for _, s := range []string{"abc123", "two words", "line\nbreak", "tab\there", "\x7f", "", "ünïcödé-token", strings.Repeat("x", 200)} {
		f.Add(s)
	}
	parse := func(tok string) (*Config, error) {
		return Parse("f.yaml", nil, func(k string) string {
			if k == "FORGELOAD_RUNNER_COMMENT_TOKEN" {
				return tok
			}
			return ""
		})
	}
	_, refused := parse("two words")
	if refused == nil {
		f.Fatal("a token with a space was taken")
	}
	f.Fuzz(func(t *testing.T, tok string) {
		cfg, err := parse(tok)
		if err != nil {
			// The error is the same whatever the token: it cannot show it.
			if err.Error() != refused.Error() {
				t.Fatalf("token %q: error %q, want %q", tok, err, refused)
			}
			return
		}
		got, err := cfg.Runner.ReadCommentToken()
		if err != nil || (got != "" && !validToken(string(got))) {
			t.Fatalf("token %q taken as %q, %v", tok, got, err)
		}
		// A config prints the same whatever its token: it cannot show it.
		if got == "" {
			return
		}
		with := fmt.Sprintf("%+v %#v", cfg, cfg)
		cfg.Runner.CommentToken = "another-token"
		if other := fmt.Sprintf("%+v %#v", cfg, cfg); with != other {
			t.Fatalf("the printed config depends on the token %q", tok)
		}
	})
}
