// Package check owns response checks: the `checks:` of a load config,
// compiled once at config time and run on every response of the endpoint
// they apply to.
//
// # Kinds
//
// A [Spec] sets exactly one kind of check:
//
//	status: [200, 201]          the status code is one of these
//	body_contains: '"ok"'       the body holds this text
//	body_not_contains: error    the body does not hold this text
//	json: $.items[0].id         the JSON body has a value at this path ...
//	exists: true                ... (or, with false, has none)
//	equals: VALUE               ... or the value there is VALUE
//	header: Content-Type        the response has this header ...
//	matches: '^application/json'  ... and its value matches this regexp
//
// JSON paths are the subset [extract.Path] reads: $ and dot-separated
// names with [n] indexes, such as $.items[0].id, evaluated with gjson.
//
// # Counting
//
// Every [Check] counts the responses it passed and failed, with atomic
// counters, so a [List] is safe for concurrent use and [List.Run] does not
// allocate when no check in it needs the body. A request fails when any
// check on it fails; [List.Run] then returns the first failing check's
// error, built once at compile time. [Suite.Stats] reports each check's
// counts under its stable name, for the run's result.
//
// Bodies are read up to [DefaultMaxBody] (or the config's checks_max_body):
// checks see only that much of a longer body.
package check
