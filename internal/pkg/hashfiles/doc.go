// Package hashfiles owns the hashFiles() expression function: it matches
// glob patterns against the files of a job's workspace and hashes what
// they match, with GitHub's semantics. Patterns are relative to the
// workspace (an absolute one must lie inside it); * and ? match within one
// path segment (dotfiles too), ** any number of segments, [...] a class; a
// pattern that matches a directory matches every file under it; a pattern
// starting with ! excludes what it matches, the last matching pattern
// deciding; blank lines and lines starting with # are skipped. The value is
// the hex SHA-256 of the SHA-256 digests of the matched regular files, in
// the lexical order of their paths, or "" when nothing matched. The
// workspace is hostile input: it is read through an [os.Root], so no
// symlink leads the walk or a read outside it (such a symlink is skipped,
// as GitHub skips files outside the workspace), symlinked directories are
// not descended (no cycles), only regular files are opened (never blocking
// on a FIFO), and the walk is bounded by its context and by MaxEntries.
package hashfiles
