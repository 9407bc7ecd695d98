// Package vars gives load requests their per-request values: templates with
// Crankfire's {{name}} and {{name|default}} placeholders, rendered from a
// [Lookup] without allocating beyond the output, and [User], the state a
// virtual user keeps between its requests (the feeder row of the current
// request and the variables extracted from earlier responses). A name is
// looked up in the user's variables first, then in the feeder row; a
// placeholder with no value takes its default, and one with neither is left
// as written, as in Crankfire. [Source] also gives each request its
// Authorization value and a new W3C traceparent, sampled by a caller's rule.
package vars
