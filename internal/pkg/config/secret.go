package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTokenFile bounds runner.comment_token_file: a forge token is tens of
// bytes.
const maxTokenFile = 4 << 10

// commentToken checks runner.comment_token and comment_token_file without
// ever showing the token.
func (p *parser) commentToken(r *Runner) {
	if r.CommentToken != "" && r.CommentTokenFile != "" {
		p.bad("runner.comment_token", "and runner.comment_token_file are both set: keep one (the file, readable by the daemon's user only, keeps the token out of the config)")
	}
	if tok := string(r.CommentToken); tok != "" && !validToken(tok) {
		p.bad("runner.comment_token", "is not a token (it holds a space, a line break or a control character; the value is not shown): paste the forge token alone")
	}
}

// validToken reports whether tok is one word of printable characters.
func validToken(tok string) bool {
	return tok != "" && strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) < 0
}

// ReadCommentToken returns the pull request comment token: runner.comment_token,
// or the content of runner.comment_token_file (its surrounding blanks
// trimmed), which must be a regular file that only its owner may read or
// write (mode 0600 or 0400). "" when neither is set. Errors name the key
// and the fix, and never hold the token.
func (r *Runner) ReadCommentToken() (Secret, error) {
	if r.CommentTokenFile == "" {
		return r.CommentToken, nil
	}
	name := r.CommentTokenFile
	fail := func(format string, args ...any) (Secret, error) {
		return "", fmt.Errorf("runner.comment_token_file %s: "+format, append([]any{name}, args...)...)
	}
	f, err := os.Open(name)
	if err != nil {
		return fail("%v: give a file that holds the forge token, readable by the daemon's user", errors.Unwrap(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	if !st.Mode().IsRegular() {
		return fail("is not a regular file: give a file that holds the forge token")
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fail("has mode %04o, so other users may read the token: chmod 600 %s", perm, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return fail("%v", err)
	}
	if len(b) > maxTokenFile {
		return fail("is larger than %d bytes: it should hold the forge token alone", maxTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	if !validToken(tok) {
		return fail("does not hold one token (it is empty, or holds a space, a line break or a control character; its content is not shown): write the forge token alone")
	}
	return Secret(tok), nil
}
