// Package redact hides credentials in text meant for people: log lines,
// error messages and summaries. [URL] is the one place that keeps a URL's
// credentials (the password of its user info and the values of
// credential-like query parameters, as [Sensitive] names them) out of that
// text, [URLAs] the same with the caller's mask, and [Error] hides a URL's
// password in an error of code that was given the URL. Every package that
// quotes a URL it was given (the forge address, the daemon config's
// redis_url, load targets, the HTTP driver's endpoints, the OAuth2 token
// and span export endpoints, the target policy's refusals, the load
// summaries' configuration rows) calls it instead of formatting the URL
// itself.
package redact
