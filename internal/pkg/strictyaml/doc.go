// Package strictyaml is the one strict-YAML layer under every parser of
// user YAML: the daemon config, load configs and workflows. [Parse] reads a
// document and reports a syntax error at the line that holds the mistake
// (yaml.v3 often names another; see [Syntax]). [Block] walks a block of
// keys strictly: a null block is empty, another kind is an error, and a key
// that is not a plain name, a merge key, a key set twice or an unknown key
// (with the closest known one as "did you mean") is an [*Error]. [Want],
// [Describe] and [IsNull] give every parser the same kind errors ("want a
// list of strings, got a mapping"), the same names for what was found and
// the same idea of null. Every [*Error] carries the line and the key path,
// and prints as "file:line: path: message". What a value means (numbers,
// durations, booleans) stays with each parser.
package strictyaml
