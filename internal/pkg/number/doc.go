// Package number scans decimal numbers in text: [Scan] measures the number
// at the start of a string (sign, digits, fraction, exponent) and [Valid]
// says whether a whole string is one. It is the one number grammar of the
// threshold parser (p99 < 300ms, baseline * 1.10) and of the workflow
// expressions' string-to-number coercion; the callers convert what it
// finds with strconv. It has no dependencies.
package number
