// Package extract implements Crankfire's response extractors, which take a
// value out of a response body and store it as a virtual user's variable
// for the user's later requests: JSON paths (gjson syntax, with
// Crankfire's $ and $. prefixes and [n] indexes accepted) and regular
// expressions (the first capture group, or the whole match).
package extract
